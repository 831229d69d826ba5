//! RESP codec and command mapping (being written).
