//! Operations, results and their wire encoding.
//!
//! Every encoding is one version byte followed by postcard. Postcard encodes an enum variant
//! as its index, so new variants are appended at the end of [`KvOp`] / [`KvResult`] and old
//! bytes keep their meaning; an incompatible change bumps the version byte instead.
//! Decoding is total: any byte string yields either a value or a [`DecodeError`].

use crate::buckets::bucket_of;
use crate::zset::{Score, ScoreBound};
use plumb_wire::{ClientId, Micros};
use serde::{Deserialize, Serialize};

/// Version byte of [`KvOp`] encodings.
pub const OP_VERSION: u8 = 1;
/// Version byte of [`KvResult`] encodings.
pub const RESULT_VERSION: u8 = 1;

/// Error text for a value that is not a canonical decimal `i64` (Redis wording, so a RESP
/// gateway can send it as `-<text>`).
pub const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// Error text for an increment whose result does not fit an `i64`.
pub const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
/// Error text for an operation on a key that holds a value of another kind.
pub const ERR_WRONG_TYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
/// Error text for request bytes that do not decode as a [`KvOp`].
pub const ERR_MALFORMED: &str = "ERR malformed operation";
/// Error text for a mutating operation sent down the read-only path.
pub const ERR_NOT_READ_ONLY: &str = "ERR operation is not read-only";
/// Error text for a read-only `Ttl` of a key with an expiry when the store does not know the
/// agreed time (after a checkpoint load, before the next batch).
pub const ERR_TTL_NEEDS_ORDER: &str = "ERR TTL needs the agreed time: send it on the ordered path";
/// Error text for `HIncrBy` on a field that is not a canonical decimal `i64`.
pub const ERR_HASH_NOT_INTEGER: &str = "ERR hash value is not an integer";
/// Error text for a score argument that is not a float (or is NaN).
pub const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
/// Error text for a `ZADD INCR` / `ZINCRBY` whose sum is NaN (`inf` plus `-inf`).
pub const ERR_SCORE_NAN: &str = "ERR resulting score is not a number (NaN)";
/// Error text for a score range end that is not a float (`ZRANGEBYSCORE`, `ZCOUNT`).
pub const ERR_MIN_MAX_NOT_FLOAT: &str = "ERR min or max is not a float";
/// Error text for `ZADD` with both `NX` and `XX`.
pub const ERR_ZADD_NX_XX: &str = "ERR XX and NX options at the same time are not compatible";
/// Error text for `ZADD` with `GT` and `LT`, or either with `NX`.
pub const ERR_ZADD_GT_LT_NX: &str =
    "ERR GT, LT, and/or NX options at the same time are not compatible";
/// Error text for `ZADD INCR` with other than one score-member pair.
pub const ERR_ZADD_INCR_PAIRS: &str = "ERR INCR option supports a single increment-element pair";

/// An operation on the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvOp {
    /// `Value(Some(v))` if `key` holds the string `v`, `Value(None)` if absent.
    Get {
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// Store the string `value`, replacing any value and expiry. `expire` is relative to the
    /// batch's agreed time; `None` means no expiry. Replies `Ok`.
    Set {
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
        expire: Option<Micros>,
    },
    /// Remove `key`. Replies `Bool(existed)`.
    Delete { key: Vec<u8> },
    /// If the key's current value equals `expected` (`None`: the key is absent), store `new`
    /// (without expiry) and reply `Bool(true)`; otherwise `Bool(false)` and no change.
    CompareAndSet {
        key: Vec<u8>,
        expected: Option<Vec<u8>>,
        new: Vec<u8>,
    },
    /// Add `delta` to the decimal integer at `key` (absent counts as 0), keeping its expiry.
    /// Replies `Int(new)`, or `Error` (state unchanged) if the value is not a canonical
    /// decimal `i64` or the sum overflows.
    Increment { key: Vec<u8>, delta: i64 },
    /// Every live key starting with `prefix`, in ascending byte order. Replies `Keys`.
    Keys { prefix: Vec<u8> },
    /// Number of live keys. Replies `Int`.
    DbSize,

    // ---- Redis commands. Appended: the indexes above keep their meaning. ----
    /// Redis `SET` with options (plain `SET [EX|PX]` is [`KvOp::Set`]), `SETNX` and `GETSET`.
    /// Stores the string `value` (overwriting a value of any kind) if `condition` holds.
    /// With `get`, replies `Value(old)` (the previous string, or `None`), or a `WRONGTYPE`
    /// error without change if the key holds another kind; without `get`, `Bool(written)`.
    SetExtended {
        key: Vec<u8>,
        value: Vec<u8>,
        expire: SetExpiry,
        condition: SetCondition,
        get: bool,
    },
    /// Remove every key (`DEL`). Replies `Int(how many existed)`; a key listed twice counts once.
    DeleteMany { keys: Vec<Vec<u8>> },
    /// Count the live keys among `keys` (`EXISTS`); a key listed twice counts twice. `Int`.
    Exists { keys: Vec<Vec<u8>> },
    /// Append to the string at `key` (absent: empty), keeping its expiry. `Int(new length)`.
    Append { key: Vec<u8>, value: Vec<u8> },
    /// Length of the string at `key`, 0 if absent. `Int`.
    StrLen { key: Vec<u8> },
    /// The strings at `keys` (`MGET`); absent keys and keys of other kinds give `None`.
    /// Replies `Values`.
    MGet { keys: Vec<Vec<u8>> },
    /// Store every pair atomically without expiry, later pairs winning (`MSET`). `Ok`.
    MSet { pairs: Vec<(Vec<u8>, Vec<u8>)> },
    /// Set the key's expiry to `after` micros from the batch's agreed time (`EXPIRE`,
    /// `PEXPIRE`) if `condition` holds; `after <= 0` removes the key. Replies `Bool(done)`,
    /// `false` if the key is absent.
    Expire {
        key: Vec<u8>,
        after: i64,
        condition: ExpireCondition,
    },
    /// Remaining lifetime in micros relative to the batch's agreed time (`TTL`, `PTTL`):
    /// `Int(-2)` if absent, `Int(-1)` if no expiry, else `Int(n)` with `n >= 1`. On the
    /// read-only path, relative to the last batch the replica executed (see [`crate::KvStore`]).
    Ttl { key: Vec<u8> },
    /// Every live key matching the Redis glob `pattern` (`KEYS`), in ascending byte order.
    /// Replies `Keys`.
    KeysMatching { pattern: Vec<u8> },
    /// Set hash fields (`HSET`), later pairs winning. `Int(fields added)`.
    HSet {
        key: Vec<u8>,
        fields: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// `Value(Some(v))` if the hash at `key` has `field` (`HGET`).
    HGet { key: Vec<u8>, field: Vec<u8> },
    /// Remove hash fields (`HDEL`); an emptied hash removes the key. `Int(fields removed)`.
    HDel { key: Vec<u8>, fields: Vec<Vec<u8>> },
    /// Every field and value of the hash, in field order (`HGETALL`). Replies `Pairs`.
    HGetAll { key: Vec<u8> },
    /// Add `delta` to the integer in a hash field (`HINCRBY`), absent counting as 0. `Int(new)`.
    HIncrBy {
        key: Vec<u8>,
        field: Vec<u8>,
        delta: i64,
    },
    /// Push each value in turn at `end` (`LPUSH`, `RPUSH`). `Int(new length)`.
    Push {
        key: Vec<u8>,
        end: End,
        values: Vec<Vec<u8>>,
    },
    /// Pop from `end` (`LPOP`, `RPOP`). Without `count`: `Value`; with `count`: `Items` (up to
    /// `count` values), or `Nil` if the key is absent. An emptied list removes the key.
    Pop {
        key: Vec<u8>,
        end: End,
        count: Option<u64>,
    },
    /// Elements `start..=stop` of the list, negative indexes counting from the end (`LRANGE`).
    /// Replies `Items`.
    LRange { key: Vec<u8>, start: i64, stop: i64 },
    /// Length of the list, 0 if absent (`LLEN`). `Int`.
    LLen { key: Vec<u8> },
    /// Add members to the set (`SADD`). `Int(members added)`.
    SAdd { key: Vec<u8>, members: Vec<Vec<u8>> },
    /// Remove members (`SREM`); an emptied set removes the key. `Int(members removed)`.
    SRem { key: Vec<u8>, members: Vec<Vec<u8>> },
    /// Every member, in byte order (`SMEMBERS`). `Items`.
    SMembers { key: Vec<u8> },
    /// Whether `member` is in the set (`SISMEMBER`). `Bool`.
    SIsMember { key: Vec<u8>, member: Vec<u8> },
    /// Remove and return random members (`SPOP`). Which ones is a function of the batch's
    /// seed and the request's position in the batch, so every replica picks the same. Without
    /// `count`: `Value`; with `count`: `Items` (empty if the key is absent).
    SPop { key: Vec<u8>, count: Option<u64> },
    /// Remove every key (`FLUSHALL`, `FLUSHDB`). `Ok`.
    FlushAll,
    /// Remove the key's expiry (`PERSIST`). `Bool(an expiry was removed)`.
    Persist { key: Vec<u8> },
    /// The kind of value at `key` (`TYPE`): `Value(Some(name))` with name `string`, `hash`,
    /// `list`, `set`, `zset` or `none`.
    Type { key: Vec<u8> },

    // ---- Sorted sets. Appended. ----
    /// Redis `ZADD` (and `ZINCRBY`: `incr` with one pair): set or add to each member's score,
    /// as `options` say. Without `incr`: `Int(members added)`, or added plus updated with
    /// `ch`. With `incr`: `Score(Some(new score))`, `Score(None)` if an option stopped it.
    /// Errors (no change): incompatible options, `incr` with other than one pair, a NaN sum.
    ZAdd {
        key: Vec<u8>,
        members: Vec<(Score, Vec<u8>)>,
        options: ZAddOptions,
    },
    /// Remove members (`ZREM`); an emptied sorted set removes the key. `Int(members removed)`.
    ZRem { key: Vec<u8>, members: Vec<Vec<u8>> },
    /// The member's score (`ZSCORE`): `Score(Some(s))`, `Score(None)` if absent.
    ZScore { key: Vec<u8>, member: Vec<u8> },
    /// Number of members, 0 if absent (`ZCARD`). `Int`.
    ZCard { key: Vec<u8> },
    /// The member's 0-based position by ascending (or, with `rev`, descending) score
    /// (`ZRANK`, `ZREVRANK`): `Int(rank)`, or `Value(None)` if the key or member is absent.
    ZRank {
        key: Vec<u8>,
        member: Vec<u8>,
        rev: bool,
    },
    /// Members in ascending (descending with `rev`) order selected by `range` (`ZRANGE`,
    /// `ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`): `Items`, or `Scored` with
    /// `with_scores`; empty if the key is absent.
    ZRange {
        key: Vec<u8>,
        range: ZRangeBy,
        rev: bool,
        with_scores: bool,
    },
    /// Number of members with a score between `min` and `max` (`ZCOUNT`). `Int`.
    ZCount {
        key: Vec<u8>,
        min: ScoreBound,
        max: ScoreBound,
    },
    /// Remove and return up to `count` members of lowest (`max`: highest) score, in that
    /// order (`ZPOPMIN`, `ZPOPMAX`). `Scored`, empty if the key is absent; an emptied sorted
    /// set removes the key.
    ZPop { key: Vec<u8>, max: bool, count: u64 },

    // ---- Several commands in one request. Appended. ----
    /// Commands one Redis connection pipelined, run one after another (`ops`: each an encoded
    /// [`KvOp`]). Replies `Each` with the encoded results in order. It may stop early, after
    /// at least one op, once the results pass [`PIPELINE_REPLY_BUDGET`] bytes (a reply must fit
    /// one frame); the caller sends the ops that did not run again. Nothing else runs between
    /// the ops of one request, which is more than a pipeline promises and costs nothing.
    Pipeline { ops: Vec<Vec<u8>> },
    /// A Redis transaction (`MULTI` ... `EXEC`): if every watched key still has the
    /// fingerprint it had when it was watched, run every op in order with nothing in between
    /// and reply `Each` with every encoded result (an op's error does not stop the others, as
    /// in Redis); otherwise run none and reply `Aborted`.
    Transaction {
        watched: Vec<Watched>,
        ops: Vec<Vec<u8>>,
    },
    /// The fingerprint of each key's entry, value and expiry (`WATCH`): `Items` of 32-byte
    /// digests, one per key; an absent key has one too.
    Fingerprints { keys: Vec<Vec<u8>> },

    // ---- More Redis commands. Appended. ----
    /// The values of hash fields (`HMGET`); an absent field or key gives `None`. `Values`.
    HMGet { key: Vec<u8>, fields: Vec<Vec<u8>> },
    /// Whether the hash has `field` (`HEXISTS`). `Bool`.
    HExists { key: Vec<u8>, field: Vec<u8> },
    /// Number of fields, 0 if absent (`HLEN`). `Int`.
    HLen { key: Vec<u8> },
    /// Every field (`HKEYS`) or, with `values`, every value (`HVALS`), in field order. `Items`.
    HKeys { key: Vec<u8>, values: bool },
    /// Set the field only if the hash lacks it (`HSETNX`). `Bool(set)`.
    HSetNx {
        key: Vec<u8>,
        field: Vec<u8>,
        value: Vec<u8>,
    },
    /// Length of the field's value, 0 if absent (`HSTRLEN`). `Int`.
    HStrLen { key: Vec<u8>, field: Vec<u8> },
    /// Number of members, 0 if absent (`SCARD`). `Int`.
    SCard { key: Vec<u8> },
    /// Whether each member is in the set (`SMISMEMBER`). `Ints` of 0 and 1.
    SMIsMember { key: Vec<u8>, members: Vec<Vec<u8>> },
    /// The list element at `index`, negative counting from the end (`LINDEX`). `Value`.
    LIndex { key: Vec<u8>, index: i64 },
    /// Replace the list element at `index` (`LSET`). `Ok`, or an error: no such key, index out
    /// of range.
    LSet {
        key: Vec<u8>,
        index: i64,
        value: Vec<u8>,
    },
    /// Keep only elements `start..=stop` (`LTRIM`, indexes as `LRANGE`); an emptied list
    /// removes the key. `Ok`.
    LTrim { key: Vec<u8>, start: i64, stop: i64 },
    /// The string at `key`, and the key removed (`GETDEL`). `Value`; `WRONGTYPE` without
    /// change if it holds another kind.
    GetDel { key: Vec<u8> },
    /// Move `from`'s value and expiry to `to` (`RENAME`: replacing it, `Ok`; `RENAMENX` with
    /// `nx`: only if `to` is absent, `Bool(moved)`). An error if `from` is absent.
    Rename {
        from: Vec<u8>,
        to: Vec<u8>,
        nx: bool,
    },
    /// Intersection, union or difference (first minus the rest) of the sets at `keys`, an
    /// absent key an empty set (`SINTER`, `SUNION`, `SDIFF`): `Items` in byte order. With
    /// `store` (`SINTERSTORE` ...), the result replaces that key, of any kind (an empty result
    /// removes it), and the reply is `Int(size)`.
    SetAlgebra {
        op: SetOp,
        keys: Vec<Vec<u8>>,
        store: Option<Vec<u8>>,
    },
    /// Pop one element from `end` of the first non-empty list among `keys` (`BLPOP`, `BRPOP`
    /// once they find one): `Pairs` of that key and the element, `Nil` if every key is absent
    /// (a blocking caller then waits), `WRONGTYPE` if a key before it holds another kind.
    PopFirst { keys: Vec<Vec<u8>>, end: End },
    /// Pop from `from_end` of the list at `from` and push onto `to_end` of the list at `to`
    /// (`LMOVE`, `RPOPLPUSH` and their blocking forms); the same key rotates. `Value` of the
    /// element, `Value(None)` if `from` is absent, `WRONGTYPE` (no change) if either key holds
    /// another kind.
    Move {
        from: Vec<u8>,
        to: Vec<u8>,
        from_end: End,
        to_end: End,
    },
    /// One step of `SCAN`: the keys of whole hash buckets from bucket `cursor` on, at least
    /// `count` of them unless none are left, filtered by the glob `pattern` and the kind `kind`
    /// (a `TYPE` name). `Cursor` of the next bucket (0: done) and the keys. A key stays in
    /// its bucket, so every key present from the first step to the last is returned exactly
    /// once.
    Scan {
        cursor: u64,
        count: u64,
        pattern: Option<Vec<u8>>,
        kind: Option<Vec<u8>>,
    },
    /// `HSCAN`, `SSCAN`, `ZSCAN` of the collection at `key` (of the kind `of` names): all of it
    /// in one step, fields and values, members, or members and scores, filtered by `pattern`:
    /// `Cursor(0, items)`; `WRONGTYPE` for another kind.
    ScanCollection {
        key: Vec<u8>,
        of: CollectionKind,
        pattern: Option<Vec<u8>>,
    },
    /// [`KvOp::Expire`] to an absolute agreed time, micros since the Unix epoch (`EXPIREAT`,
    /// `PEXPIREAT`; agreed time is the primaries' wall clock). `Bool(done)`.
    ExpireAt {
        key: Vec<u8>,
        at: i64,
        condition: ExpireCondition,
    },
    /// The key's expiry as agreed micros since the Unix epoch (`EXPIRETIME`, `PEXPIRETIME`):
    /// `Int(-2)` if absent, `Int(-1)` if it has none.
    ExpireTime { key: Vec<u8> },
    /// Remove elements equal to `element` (`LREM`): `count > 0` the first `count` from the
    /// left, `< 0` from the right, 0 all. `Int(removed)`.
    LRem {
        key: Vec<u8>,
        count: i64,
        element: Vec<u8>,
    },
    /// Insert `element` before (or after) the first `pivot` (`LINSERT`): `Int(new length)`,
    /// `Int(-1)` if no pivot, `Int(0)` if the key is absent.
    LInsert {
        key: Vec<u8>,
        before: bool,
        pivot: Vec<u8>,
        element: Vec<u8>,
    },
    /// Positions of `element` (`LPOS`): from the `rank`-th match (negative: counting from the
    /// right), looking at no more than `maxlen` elements (0: all). Without `count`: `Int` of
    /// the first or `Value(None)`; with it (0: all): `Ints`.
    LPos {
        key: Vec<u8>,
        element: Vec<u8>,
        rank: i64,
        count: Option<u64>,
        maxlen: u64,
    },
    /// Move `member` from the set at `from` to the set at `to` (`SMOVE`). `Bool(moved)`.
    SMove {
        from: Vec<u8>,
        to: Vec<u8>,
        member: Vec<u8>,
    },
    /// Random members, not removed (`SRANDMEMBER`), drawn from the request's seed (so it is
    /// ordered, though it changes nothing). Without `count`: `Value`; `count >= 0`: up to that
    /// many distinct members; `< 0`: that many, repeats allowed. `Items`.
    SRandMember { key: Vec<u8>, count: Option<i64> },
    /// Store every pair, or none if any key exists (`MSETNX`). `Bool(stored)`.
    MSetNx { pairs: Vec<(Vec<u8>, Vec<u8>)> },
    /// Bytes `start..=end` of the string, negative counting from the end (`GETRANGE`).
    /// `Value(Some)`, empty for an absent key.
    GetRange { key: Vec<u8>, start: i64, end: i64 },
    /// Overwrite the string from byte `offset`, padding with zero bytes (`SETRANGE`).
    /// `Int(new length)`; an absent key with an empty value stays absent.
    SetRange {
        key: Vec<u8>,
        offset: u64,
        value: Vec<u8>,
    },
    /// Remove members with scores between `min` and `max` (`ZREMRANGEBYSCORE`). `Int`.
    ZRemRangeByScore {
        key: Vec<u8>,
        min: ScoreBound,
        max: ScoreBound,
    },
    /// Remove members at ranks `start..=stop` (`ZREMRANGEBYRANK`, indexes as `LRANGE`). `Int`.
    ZRemRangeByRank { key: Vec<u8>, start: i64, stop: i64 },
    /// The members' scores as Redis prints them (`ZMSCORE`). `Values`.
    ZMScore { key: Vec<u8>, members: Vec<Vec<u8>> },
    /// How many keys there are and how many of them have an expiry (`INFO keyspace`).
    /// `Ints([keys, expiring])`.
    KeyspaceStats,
    /// The string at `key`, and its expiry changed as `expire` says (`GETEX`): `Clear` is
    /// `PERSIST`, `After`/`At` set it (a time not after the batch's removes the key), `Keep`
    /// or `None` leave it. `Value`; `WRONGTYPE` for another kind.
    GetEx {
        key: Vec<u8>,
        expire: Option<SetExpiry>,
    },
    /// Union, intersection or difference (first minus the rest) of the sorted sets, or sets
    /// (every member scored 1), at `keys` (`ZUNION`, `ZINTER`, `ZDIFF` and their `STORE`
    /// forms): each input's scores times its weight (`weights` empty: all 1), combined by
    /// `aggregate` (a NaN sum counts as 0, as in Redis). Without `store`: `Items`, or
    /// `Scored` with `with_scores`. With `store`, the result replaces that key (an empty one
    /// removes it): `Int(size)`.
    ZSetAlgebra {
        op: SetOp,
        keys: Vec<Vec<u8>>,
        weights: Vec<Score>,
        aggregate: Aggregate,
        store: Option<Vec<u8>>,
        with_scores: bool,
    },
    /// Number of members between the lexicographic bounds (`ZLEXCOUNT`). `Int`.
    ZLexCount {
        key: Vec<u8>,
        min: LexBound,
        max: LexBound,
    },
    /// Remove the members between the lexicographic bounds (`ZREMRANGEBYLEX`). `Int`.
    ZRemRangeByLex {
        key: Vec<u8>,
        min: LexBound,
        max: LexBound,
    },

    // ---- Appended: multi-key pops, float increments, random picks, copies. ----
    /// Pop up to `count` elements from `end` of the first non-empty list among `keys`
    /// (`LMPOP`, and `BLMPOP` once it finds one): `Popped(key, elements)`, `Nil` if every key
    /// is absent, `WRONGTYPE` (no change) if a key before it holds another kind.
    ListMPop {
        keys: Vec<Vec<u8>>,
        end: End,
        count: u64,
    },
    /// Pop up to `count` members of lowest (`max`: highest) score from the first non-empty
    /// sorted set among `keys` (`ZMPOP`, `BZMPOP`, `BZPOPMIN`, `BZPOPMAX`):
    /// `PoppedScored(key, members)`, `Nil` if every key is absent, `WRONGTYPE` as `ListMPop`.
    ZMPop {
        keys: Vec<Vec<u8>>,
        max: bool,
        count: u64,
    },
    /// Add `delta` to the float at `key` (absent counts as 0), keeping its expiry
    /// (`INCRBYFLOAT`): `Value(new, as Redis prints it)`; an error (no change) if the value is
    /// not a float or the sum is NaN or infinite.
    IncrByFloat { key: Vec<u8>, delta: Score },
    /// [`KvOp::IncrByFloat`] on a hash field (`HINCRBYFLOAT`).
    HIncrByFloat {
        key: Vec<u8>,
        field: Vec<u8>,
        delta: Score,
    },
    /// Random fields of the hash, not removed (`HRANDFIELD`), drawn from the request's seed:
    /// without `count` `Value`; `count >= 0` up to that many distinct fields, `< 0` that many
    /// with repeats; `Items`, or `Pairs` with `with_values`.
    HRandField {
        key: Vec<u8>,
        count: Option<i64>,
        with_values: bool,
    },
    /// Random members of the sorted set (`ZRANDMEMBER`), as [`KvOp::HRandField`]; `Scored`
    /// with `with_scores`.
    ZRandMember {
        key: Vec<u8>,
        count: Option<i64>,
        with_scores: bool,
    },
    /// A random live key (`RANDOMKEY`), drawn from the request's seed: `Value`, `None` if
    /// the store is empty.
    RandomKey,
    /// Copy the value and expiry at `from` to `to` (`COPY`), replacing `to` only with
    /// `replace`. `Bool(copied)`.
    Copy {
        from: Vec<u8>,
        to: Vec<u8>,
        replace: bool,
    },
    /// Store the members [`KvOp::ZRange`] selects from `src`, with their scores, at `dest`
    /// (`ZRANGESTORE`), replacing any value; an empty result removes `dest`. `Int(size)`.
    ZRangeStore {
        dest: Vec<u8>,
        src: Vec<u8>,
        range: ZRangeBy,
        rev: bool,
    },
    /// Size of the intersection of the sets (`SINTERCARD`) or sorted sets and sets
    /// (`ZINTERCARD`, with `sorted`), counting no further than `limit` (0: no limit). `Int`.
    InterCard {
        keys: Vec<Vec<u8>>,
        limit: u64,
        sorted: bool,
    },
    /// Bytes the key and its value take in the store's encoding, an estimate of its memory
    /// (`MEMORY USAGE`): `Int`, or `Value(None)` if absent.
    MemoryUsage { key: Vec<u8> },
    /// Set or clear the bit at `offset` of the string (`SETBIT`; bit 0 is the most significant
    /// bit of the first byte), growing it with zero bytes and keeping its expiry. `Int(old bit)`.
    SetBit {
        key: Vec<u8>,
        offset: u64,
        bit: bool,
    },
    /// The bit at `offset` of the string, 0 past its end or for an absent key (`GETBIT`). `Int`.
    GetBit { key: Vec<u8>, offset: u64 },
    /// The longest common subsequence of the strings at `a` and `b` (`LCS`), absent keys
    /// empty: `Value(lcs)`, or `Int(length)` with `len_only`, or with `idx` `Matches` of the
    /// matching ranges at least `min_match_len` long, as Redis walks them (last first).
    Lcs {
        a: Vec<u8>,
        b: Vec<u8>,
        len_only: bool,
        idx: bool,
        min_match_len: u64,
        with_match_len: bool,
    },
    // ---- Appended for pub/sub (pubsub.rs). ----
    /// One more connection of identity `subscriber` behind each channel and pattern (a name
    /// listed twice counts twice). The subscriber is named, not taken from the request's
    /// sender: a gateway sends through any of its pool identities but receives through one.
    /// Replies `Ok`.
    Subscribe {
        subscriber: ClientId,
        channels: Vec<Vec<u8>>,
        patterns: Vec<Vec<u8>>,
    },
    /// One fewer connection of `subscriber` behind each channel and pattern. `Ok`.
    Unsubscribe {
        subscriber: ClientId,
        channels: Vec<Vec<u8>>,
        patterns: Vec<Vec<u8>>,
    },
    /// Forget every subscription of `subscriber` (its gateway started afresh).
    /// `Int(channel and pattern entries it had)`.
    ResetSubscriptions { subscriber: ClientId },
    /// Push `message` to every identity subscribed to `channel` or a matching pattern.
    /// `Int(receiving connections cluster-wide)`.
    Publish { channel: Vec<u8>, message: Vec<u8> },
    /// Channels with subscribers, matching `pattern` if given, in byte order. `Items`.
    PubSubChannels { pattern: Option<Vec<u8>> },
    /// Subscribed connections per channel. `Counts`.
    PubSubNumSub { channels: Vec<Vec<u8>> },
    /// Distinct subscribed patterns. `Int`.
    PubSubNumPat,
    // ---- Scripts. Appended. ----
    /// A Redis Lua script (`EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO`; the gateway sends the
    /// whole body for `EVALSHA`, so no script cache is part of the replicated state). Run by
    /// the store's [`crate::Scripting`] engine at the batch's agreed time with the request's
    /// seed; its commands run on the store one after another with nothing in between. Replies
    /// `Script` (the script's reply), or an error: the script's, or `ERR` if the store has no
    /// engine. With `read_only`, a write command inside is refused. Always on the ordered
    /// path, even read-only: the script may read the agreed time (expiry) and the seed.
    Eval {
        #[serde(with = "serde_bytes")]
        script: Vec<u8>,
        keys: Vec<Vec<u8>>,
        args: Vec<Vec<u8>>,
        read_only: bool,
    },
    /// Appended. Like [`KvOp::Push`], but only onto a list that exists (`LPUSHX`, `RPUSHX`):
    /// an absent key stays absent. `Int(new length)`, 0 if absent.
    PushExisting {
        key: Vec<u8>,
        end: End,
        values: Vec<Vec<u8>>,
    },
    /// Appended. Remove every key whose expiry has passed by the batch's time. Expiry is per
    /// object (a due key that no operation names stays stored, docs/objects.md "Access
    /// sets"), so the Redis gateway sends this every few seconds to give the memory of keys
    /// that expire unread back. No client command. `Int(keys removed)`.
    PurgeExpired,
}

/// How [`KvOp::ZSetAlgebra`] combines a member's scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aggregate {
    Sum,
    Min,
    Max,
}

/// Longest string `SETRANGE` may make. Redis allows 512 MiB; here a few bytes of request
/// would make every replica allocate that much, and a `GET` of more than half a frame could
/// not be answered, so 8 MiB.
pub const MAX_STRING: u64 = 8 << 20;
/// Error text for a `SETRANGE` past [`MAX_STRING`].
pub const ERR_STRING_TOO_LONG: &str =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// The collection kind a [`KvOp::ScanCollection`] expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CollectionKind {
    Hash,
    Set,
    ZSet,
}

/// The operation of [`KvOp::SetAlgebra`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SetOp {
    Inter,
    Union,
    Diff,
}

/// Error text for `RENAME` of an absent key (and `LSET` on one).
pub const ERR_NO_SUCH_KEY: &str = "ERR no such key";
/// Error text for `LSET` past either end.
pub const ERR_INDEX_RANGE: &str = "ERR index out of range";

/// Reply bytes after which a [`KvOp::Pipeline`] stops and leaves its remaining ops to the
/// next request: a quarter of a frame, so one more large result still fits.
pub const PIPELINE_REPLY_BUDGET: usize = 4 << 20;

/// Error text for `Eval` on a store built without a script engine.
pub const ERR_NO_SCRIPTING: &str =
    "ERR scripting is not built into this store (it needs plumb-script's engine)";

/// Error text for a pipeline or transaction inside another: the ops of one are single
/// commands. Decoding them one level at a time keeps hostile nesting from exhausting the
/// stack.
pub const ERR_NESTED: &str = "ERR a pipelined or transaction command cannot hold another";

/// A key a transaction watches and the fingerprint ([`KvOp::Fingerprints`]) it had.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watched {
    pub key: Vec<u8>,
    pub fingerprint: [u8; 32],
}

/// The options of Redis 7 `ZADD`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZAddOptions {
    /// Only add new members.
    pub nx: bool,
    /// Only update existing members.
    pub xx: bool,
    /// Only update when the new score is greater than the current one (new members are added).
    pub gt: bool,
    /// Only update when the new score is less than the current one (new members are added).
    pub lt: bool,
    /// Count updated members as well as added ones.
    pub ch: bool,
    /// Add the score to the current one (absent: 0) and reply with the result.
    pub incr: bool,
}

/// Which members [`KvOp::ZRange`] selects, counted in its direction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ZRangeBy {
    /// Positions `start..=stop`, negative ones counting from the end (Redis' `ZRANGE` index
    /// arithmetic, as `LRANGE`).
    Index { start: i64, stop: i64 },
    /// Members with scores between `min` and `max` (whatever the direction), then `limit`:
    /// skip `offset` of them and take `count` (a negative `count`: all; a negative `offset`:
    /// none), as Redis' `LIMIT`.
    Score {
        min: ScoreBound,
        max: ScoreBound,
        limit: Option<(i64, i64)>,
    },
    /// Appended. Members between `min` and `max` in byte order (`BYLEX`; meant for sorted
    /// sets whose members share one score, as in Redis), then `limit` as for `Score`.
    Lex {
        min: LexBound,
        max: LexBound,
        limit: Option<(i64, i64)>,
    },
}

/// A bound of a lexicographic range: `-`, `+`, `[member` (inclusive) or `(member`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LexBound {
    Lowest,
    Highest,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

impl LexBound {
    /// Redis' syntax; `None` is its "min or max not valid string range item".
    pub fn parse(arg: &[u8]) -> Option<LexBound> {
        match arg.split_first()? {
            (b'-', []) => Some(LexBound::Lowest),
            (b'+', []) => Some(LexBound::Highest),
            (b'[', rest) => Some(LexBound::Inclusive(rest.to_vec())),
            (b'(', rest) => Some(LexBound::Exclusive(rest.to_vec())),
            _ => None,
        }
    }

    /// Whether `member` is at or above this bound taken as the range's minimum.
    pub fn below(&self, member: &[u8]) -> bool {
        match self {
            LexBound::Lowest => true,
            LexBound::Highest => false,
            LexBound::Inclusive(x) => member >= x.as_slice(),
            LexBound::Exclusive(x) => member > x.as_slice(),
        }
    }

    /// Whether `member` is at or below this bound taken as the range's maximum.
    pub fn above(&self, member: &[u8]) -> bool {
        match self {
            LexBound::Lowest => false,
            LexBound::Highest => true,
            LexBound::Inclusive(x) => member <= x.as_slice(),
            LexBound::Exclusive(x) => member < x.as_slice(),
        }
    }
}

/// Expiry handling of [`KvOp::SetExtended`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SetExpiry {
    /// No expiry (what a plain `SET` does).
    Clear,
    /// Expire this many micros after the batch's agreed time (`EX`, `PX`); 0 removes the key.
    After(Micros),
    /// Keep the key's current expiry (`KEEPTTL`).
    Keep,
    /// Appended. Expire at this agreed time, micros since the Unix epoch (`EXAT`, `PXAT`); a
    /// time not after the batch's removes the key.
    At(Micros),
}

/// When [`KvOp::SetExtended`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SetCondition {
    Always,
    /// Only if the key is absent (`NX`).
    IfAbsent,
    /// Only if the key exists, of any kind (`XX`).
    IfPresent,
}

/// The options of Redis 7 `EXPIRE`, checked in Redis' order. `gt` fails on a key without
/// expiry (no expiry counts as infinite); `lt` passes on one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpireCondition {
    /// Only if the key has no expiry.
    pub nx: bool,
    /// Only if the key has an expiry.
    pub xx: bool,
    /// Only if the new expiry is later than the current one.
    pub gt: bool,
    /// Only if the new expiry is earlier than the current one.
    pub lt: bool,
}

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum End {
    Left,
    Right,
}

/// The reply to a [`KvOp`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvResult {
    Value(#[serde(with = "serde_bytes")] Option<Vec<u8>>),
    Ok,
    Bool(bool),
    Int(i64),
    /// A Redis-style error text, starting with its code (`ERR`, `WRONGTYPE`).
    Error(String),
    Keys(Vec<Vec<u8>>),
    // ---- Appended for the Redis commands. ----
    /// One optional string per requested key (`MGET`).
    Values(Vec<Option<Vec<u8>>>),
    /// A list of strings: list elements, set members, popped values.
    Items(Vec<Vec<u8>>),
    /// Field/value pairs (`HGETALL`).
    Pairs(Vec<(Vec<u8>, Vec<u8>)>),
    /// No such key where an array was asked for (`LPOP key count` on an absent key).
    Nil,
    // ---- Appended for sorted sets. ----
    /// A score, or none (`ZSCORE`, `ZINCRBY`).
    Score(Option<Score>),
    /// Members with their scores, in order (`ZRANGE ... WITHSCORES`, `ZPOPMIN`).
    Scored(Vec<(Vec<u8>, Score)>),
    // ---- Appended for pipelines and transactions. ----
    /// One encoded result per op that ran, in order.
    Each(Vec<Vec<u8>>),
    /// A watched key changed: the transaction did not run (`EXEC` replies nil).
    Aborted,
    // ---- Appended. ----
    /// Integers (`SMISMEMBER`).
    Ints(Vec<i64>),
    /// A scan step: the cursor to go on from (0: done) and what it found.
    Cursor(u64, Vec<Vec<u8>>),
    /// Appended. Elements popped from the list at a key (`LMPOP`).
    Popped(Vec<u8>, Vec<Vec<u8>>),
    /// Members and scores popped from the sorted set at a key (`ZMPOP`, `BZPOPMIN`).
    PoppedScored(Vec<u8>, Vec<(Vec<u8>, Score)>),
    /// Appended. `LCS ... IDX`: each matching range as `[a_start, a_end, b_start, b_end]`,
    /// with its length after them if asked, and the length of the whole subsequence.
    Matches(Vec<Vec<i64>>, i64),
    // ---- Appended for pub/sub. ----
    /// Names with a count each (`PUBSUB NUMSUB`).
    Counts(Vec<(Vec<u8>, i64)>),
    // ---- Appended for scripts. ----
    /// A script's reply as RESP2 bytes (one value, possibly nested), passed to the client
    /// unchanged. Bytes rather than a tree so that decoding a result never recurses.
    Script(#[serde(with = "serde_bytes")] Vec<u8>),
}

pub use plumb_app::codec::DecodeError;
use plumb_app::codec::{decode_versioned, encode_versioned};
use plumb_app::AccessSet;

/// Which keys an operation may touch: the request analysis an object-level execution
/// (ZZ, ODRC) needs, with one object per key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Footprint<'a> {
    Keys(Vec<&'a [u8]>),
    /// Every key whose name starts with this prefix (empty: the whole key space).
    Prefix(&'a [u8]),
}

impl KvOp {
    /// [`KvOp::Subscribe`] if `subscribe`, else [`KvOp::Unsubscribe`], for `subscriber`.
    pub fn subscription(
        subscribe: bool,
        subscriber: ClientId,
        channels: Vec<Vec<u8>>,
        patterns: Vec<Vec<u8>>,
    ) -> KvOp {
        if subscribe {
            KvOp::Subscribe {
                subscriber,
                channels,
                patterns,
            }
        } else {
            KvOp::Unsubscribe {
                subscriber,
                channels,
                patterns,
            }
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(OP_VERSION, self)
    }

    pub fn decode(bytes: &[u8]) -> Result<KvOp, DecodeError> {
        decode_versioned(OP_VERSION, bytes)
    }

    /// True if the operation can change state, so it must not run on the read-only path.
    pub fn is_mutating(&self) -> bool {
        match self {
            KvOp::Get { .. }
            | KvOp::Keys { .. }
            | KvOp::DbSize
            | KvOp::Exists { .. }
            | KvOp::StrLen { .. }
            | KvOp::MGet { .. }
            | KvOp::Ttl { .. }
            | KvOp::KeysMatching { .. }
            | KvOp::HGet { .. }
            | KvOp::HGetAll { .. }
            | KvOp::LRange { .. }
            | KvOp::LLen { .. }
            | KvOp::SMembers { .. }
            | KvOp::SIsMember { .. }
            | KvOp::Type { .. }
            | KvOp::ZScore { .. }
            | KvOp::ZCard { .. }
            | KvOp::ZRank { .. }
            | KvOp::ZRange { .. }
            | KvOp::ZCount { .. }
            | KvOp::Fingerprints { .. }
            | KvOp::HMGet { .. }
            | KvOp::HExists { .. }
            | KvOp::HLen { .. }
            | KvOp::HKeys { .. }
            | KvOp::HStrLen { .. }
            | KvOp::SCard { .. }
            | KvOp::SMIsMember { .. }
            | KvOp::LIndex { .. }
            | KvOp::SetAlgebra { store: None, .. }
            | KvOp::Scan { .. }
            | KvOp::ScanCollection { .. }
            | KvOp::ExpireTime { .. }
            | KvOp::LPos { .. }
            | KvOp::GetRange { .. }
            | KvOp::ZMScore { .. }
            | KvOp::KeyspaceStats
            | KvOp::ZSetAlgebra { store: None, .. }
            | KvOp::ZLexCount { .. }
            | KvOp::InterCard { .. }
            | KvOp::MemoryUsage { .. }
            | KvOp::GetBit { .. }
            | KvOp::Lcs { .. }
            | KvOp::PubSubChannels { .. }
            | KvOp::PubSubNumSub { .. }
            | KvOp::PubSubNumPat => false,
            KvOp::HSetNx { .. }
            | KvOp::LSet { .. }
            | KvOp::LTrim { .. }
            | KvOp::GetDel { .. }
            | KvOp::Rename { .. }
            | KvOp::SetAlgebra { store: Some(_), .. }
            | KvOp::PopFirst { .. }
            | KvOp::Move { .. }
            | KvOp::ExpireAt { .. }
            | KvOp::LRem { .. }
            | KvOp::LInsert { .. }
            | KvOp::SMove { .. }
            | KvOp::SRandMember { .. }
            | KvOp::MSetNx { .. }
            | KvOp::SetRange { .. }
            | KvOp::ZRemRangeByScore { .. }
            | KvOp::ZRemRangeByRank { .. }
            | KvOp::GetEx { .. }
            | KvOp::ZSetAlgebra { store: Some(_), .. }
            | KvOp::ZRemRangeByLex { .. }
            | KvOp::ListMPop { .. }
            | KvOp::ZMPop { .. }
            | KvOp::IncrByFloat { .. }
            | KvOp::HIncrByFloat { .. }
            | KvOp::Copy { .. }
            | KvOp::ZRangeStore { .. }
            // Random picks change nothing but draw from the batch's seed, so they are ordered.
            | KvOp::HRandField { .. }
            | KvOp::ZRandMember { .. }
            | KvOp::RandomKey
            | KvOp::SetBit { .. }
            | KvOp::Subscribe { .. }
            | KvOp::Unsubscribe { .. }
            | KvOp::ResetSubscriptions { .. }
            | KvOp::Publish { .. }
            // Even a read-only script: see `KvOp::Eval`.
            | KvOp::Eval { .. } => true,
            KvOp::Pipeline { ops } | KvOp::Transaction { ops, .. } => ops
                .iter()
                .any(|op| KvOp::decode(op).map_or(true, |op| op.is_mutating())),
            KvOp::Set { .. }
            | KvOp::Delete { .. }
            | KvOp::CompareAndSet { .. }
            | KvOp::Increment { .. }
            | KvOp::SetExtended { .. }
            | KvOp::DeleteMany { .. }
            | KvOp::Append { .. }
            | KvOp::MSet { .. }
            | KvOp::Expire { .. }
            | KvOp::HSet { .. }
            | KvOp::HDel { .. }
            | KvOp::HIncrBy { .. }
            | KvOp::Push { .. }
            | KvOp::PushExisting { .. }
            | KvOp::Pop { .. }
            | KvOp::SAdd { .. }
            | KvOp::SRem { .. }
            | KvOp::SPop { .. }
            | KvOp::FlushAll
            | KvOp::Persist { .. }
            | KvOp::ZAdd { .. }
            | KvOp::ZRem { .. }
            | KvOp::ZPop { .. }
            | KvOp::PurgeExpired => true,
        }
    }

    pub fn footprint(&self) -> Footprint<'_> {
        match self {
            KvOp::Get { key }
            | KvOp::Set { key, .. }
            | KvOp::Delete { key }
            | KvOp::CompareAndSet { key, .. }
            | KvOp::Increment { key, .. }
            | KvOp::SetExtended { key, .. }
            | KvOp::Append { key, .. }
            | KvOp::StrLen { key }
            | KvOp::Expire { key, .. }
            | KvOp::Ttl { key }
            | KvOp::HSet { key, .. }
            | KvOp::HGet { key, .. }
            | KvOp::HDel { key, .. }
            | KvOp::HGetAll { key }
            | KvOp::HIncrBy { key, .. }
            | KvOp::Push { key, .. }
            | KvOp::PushExisting { key, .. }
            | KvOp::Pop { key, .. }
            | KvOp::LRange { key, .. }
            | KvOp::LLen { key }
            | KvOp::SAdd { key, .. }
            | KvOp::SRem { key, .. }
            | KvOp::SMembers { key }
            | KvOp::SIsMember { key, .. }
            | KvOp::SPop { key, .. }
            | KvOp::Persist { key }
            | KvOp::Type { key }
            | KvOp::ZAdd { key, .. }
            | KvOp::ZRem { key, .. }
            | KvOp::ZScore { key, .. }
            | KvOp::ZCard { key }
            | KvOp::ZRank { key, .. }
            | KvOp::ZRange { key, .. }
            | KvOp::ZCount { key, .. }
            | KvOp::ZPop { key, .. }
            | KvOp::HMGet { key, .. }
            | KvOp::HExists { key, .. }
            | KvOp::HLen { key }
            | KvOp::HKeys { key, .. }
            | KvOp::HSetNx { key, .. }
            | KvOp::HStrLen { key, .. }
            | KvOp::SCard { key }
            | KvOp::SMIsMember { key, .. }
            | KvOp::LIndex { key, .. }
            | KvOp::LSet { key, .. }
            | KvOp::LTrim { key, .. }
            | KvOp::GetDel { key }
            | KvOp::ScanCollection { key, .. }
            | KvOp::ExpireAt { key, .. }
            | KvOp::ExpireTime { key }
            | KvOp::LRem { key, .. }
            | KvOp::LInsert { key, .. }
            | KvOp::LPos { key, .. }
            | KvOp::SRandMember { key, .. }
            | KvOp::GetRange { key, .. }
            | KvOp::SetRange { key, .. }
            | KvOp::ZRemRangeByScore { key, .. }
            | KvOp::ZRemRangeByRank { key, .. }
            | KvOp::ZMScore { key, .. }
            | KvOp::GetEx { key, .. }
            | KvOp::ZLexCount { key, .. }
            | KvOp::ZRemRangeByLex { key, .. }
            | KvOp::IncrByFloat { key, .. }
            | KvOp::HIncrByFloat { key, .. }
            | KvOp::HRandField { key, .. }
            | KvOp::ZRandMember { key, .. }
            | KvOp::MemoryUsage { key }
            | KvOp::SetBit { key, .. }
            | KvOp::GetBit { key, .. } => Footprint::Keys(vec![key.as_slice()]),
            KvOp::Copy { from, to, .. } => Footprint::Keys(vec![from.as_slice(), to.as_slice()]),
            KvOp::Lcs { a, b, .. } => Footprint::Keys(vec![a.as_slice(), b.as_slice()]),
            KvOp::ZRangeStore { dest, src, .. } => {
                Footprint::Keys(vec![dest.as_slice(), src.as_slice()])
            }
            KvOp::ListMPop { keys, .. } | KvOp::ZMPop { keys, .. } | KvOp::InterCard { keys, .. } => {
                Footprint::Keys(keys.iter().map(Vec::as_slice).collect())
            }
            KvOp::SMove { from, to, .. } => Footprint::Keys(vec![from.as_slice(), to.as_slice()]),
            KvOp::MSetNx { pairs } => {
                Footprint::Keys(pairs.iter().map(|(k, _)| k.as_slice()).collect())
            }
            KvOp::Rename { from, to, .. } | KvOp::Move { from, to, .. } => {
                Footprint::Keys(vec![from.as_slice(), to.as_slice()])
            }
            KvOp::PopFirst { keys, .. } => {
                Footprint::Keys(keys.iter().map(Vec::as_slice).collect())
            }
            KvOp::SetAlgebra { keys, store, .. } | KvOp::ZSetAlgebra { keys, store, .. } => {
                Footprint::Keys(keys.iter().chain(store.iter()).map(Vec::as_slice).collect())
            }
            KvOp::DeleteMany { keys }
            | KvOp::Exists { keys }
            | KvOp::MGet { keys }
            | KvOp::Fingerprints { keys } => {
                Footprint::Keys(keys.iter().map(Vec::as_slice).collect())
            }
            KvOp::MSet { pairs } => {
                Footprint::Keys(pairs.iter().map(|(k, _)| k.as_slice()).collect())
            }
            KvOp::Keys { prefix } => Footprint::Prefix(prefix),
            KvOp::KeysMatching { pattern } => {
                Footprint::Prefix(crate::glob::literal_prefix(pattern))
            }
            // The whole key space: the ops inside are encoded, and a footprint borrows from
            // the op. Conservative until object-level execution needs better.
            KvOp::DbSize
            | KvOp::PurgeExpired
            | KvOp::RandomKey
            | KvOp::KeyspaceStats
            | KvOp::FlushAll
            | KvOp::Scan { .. }
            | KvOp::Pipeline { .. }
            | KvOp::Transaction { .. }
            // A script may touch keys it was not given (Redis allows it, if unwisely).
            | KvOp::Eval { .. } => Footprint::Prefix(&[]),
            // Subscriptions and messages are not keys.
            KvOp::Subscribe { .. }
            | KvOp::Unsubscribe { .. }
            | KvOp::ResetSubscriptions { .. }
            | KvOp::Publish { .. }
            | KvOp::PubSubChannels { .. }
            | KvOp::PubSubNumSub { .. }
            | KvOp::PubSubNumPat => Footprint::Keys(Vec::new()),
        }
    }
}

/// The keys an operation reads or writes itself: for a pipeline or a transaction, the watched
/// keys only, since each op inside names its own when it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OwnKeys<'a> {
    Keys(Vec<&'a [u8]>),
    /// Any key whose name starts with this prefix (empty: any key).
    Prefix(&'a [u8]),
}

impl KvOp {
    pub(crate) fn own_keys(&self) -> OwnKeys<'_> {
        match self {
            KvOp::Pipeline { .. } => OwnKeys::Keys(Vec::new()),
            KvOp::Transaction { watched, .. } => {
                OwnKeys::Keys(watched.iter().map(|w| w.key.as_slice()).collect())
            }
            op => match op.footprint() {
                Footprint::Keys(keys) => OwnKeys::Keys(keys),
                Footprint::Prefix(p) => OwnKeys::Prefix(p),
            },
        }
    }

    /// The buckets this operation may read or write (docs/objects.md "Access sets"): those of
    /// its keys and, for a pipeline or transaction, of every op inside. `KEYS`, `SCAN`,
    /// `RANDOMKEY`, `DBSIZE`, `INFO keyspace`, `FLUSHALL` and scripts (which may use keys
    /// they were not given) are [`AccessSet::All`]; pub/sub touches only the subscriptions,
    /// which are metadata, so no bucket.
    pub fn access_set(&self) -> AccessSet {
        let own = match self.own_keys() {
            // A prefix is not a set of buckets: keys are hashed to them.
            OwnKeys::Prefix(_) => return AccessSet::All,
            OwnKeys::Keys(keys) => {
                AccessSet::objects(stale_access(keys).into_iter().map(bucket_of))
            }
        };
        match self {
            KvOp::Pipeline { ops } | KvOp::Transaction { ops, .. } => ops
                .iter()
                .filter_map(|op| KvOp::decode(op).ok())
                // A nested pipeline or transaction is refused: it touches nothing.
                .filter(|op| !matches!(op, KvOp::Pipeline { .. } | KvOp::Transaction { .. }))
                .fold(own, |set, op| set.union(op.access_set())),
            _ => own,
        }
    }
}

/// The keys as they are, or under the `stale-access-set` sabotage without the last of two
/// or more: an access set that misses an object its operation uses.
#[cfg_attr(not(feature = "sabotage"), allow(unused_mut))]
fn stale_access(mut keys: Vec<&[u8]>) -> Vec<&[u8]> {
    #[cfg(feature = "sabotage")]
    if keys.len() > 1 && plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::StaleAccessSet) {
        keys.pop();
    }
    keys
}

impl KvResult {
    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(RESULT_VERSION, self)
    }

    pub fn decode(bytes: &[u8]) -> Result<KvResult, DecodeError> {
        decode_versioned(RESULT_VERSION, bytes)
    }

    pub fn error(text: &str) -> KvResult {
        KvResult::Error(text.to_string())
    }
}

/// The integer a string value denotes, if it is the canonical decimal form of an `i64`
/// (optional `-`, no `+`, no leading zeros, no `-0`, no spaces), as Redis' `INCR` accepts.
/// Canonical only, so every value has at most one reading and `Increment` round-trips.
pub fn parse_integer(value: &[u8]) -> Option<i64> {
    if value.len() > 20 {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?;
    let n: i64 = text.parse().ok()?;
    (n.to_string().as_bytes() == value).then_some(n)
}
