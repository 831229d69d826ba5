//! What the storage test files share: the model every store is checked against.

use plumb_storage::StoreOp;
use std::collections::BTreeMap;

/// The records a store holds, by key.
pub type Model = BTreeMap<String, Vec<u8>>;

/// What `op` does to the records, as the store must do it.
pub fn apply_model(model: &mut Model, op: &StoreOp) {
    match op {
        StoreOp::Put { key, value } => {
            model.insert(key.clone(), value.clone());
        }
        StoreOp::Delete { key } => {
            model.remove(key);
        }
        StoreOp::DeletePrefix { prefix } => model.retain(|k, _| !k.starts_with(prefix.as_str())),
        StoreOp::Sync => {}
    }
}
