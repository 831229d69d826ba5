//! Configuration of a sketcher and of a sharded sketching core, with validation that says
//! what is wrong.

/// Settings of one [`crate::Sketcher`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SketcherConfig {
    /// Largest number of history-table entries; beyond it the least recently used entry is
    /// evicted. At least 1.
    pub max_entries: usize,
    /// Blacklist entries that transition often (the optimisation §3.3 of the paper describes
    /// but did not implement).
    pub auto_blacklist: bool,
    /// How many of an entry's most recent reads are looked at (1..=64).
    pub transition_window: u8,
    /// An entry is blacklisted when MORE than this many of the reads in its window were
    /// transitions. Below `transition_window`, or it could never trigger.
    pub transition_threshold: u8,
    /// How long (microseconds of the caller's `now`) an automatically blacklisted entry stays
    /// blacklisted before fast reads are tried again. At least 1.
    pub blacklist_cooldown_us: u64,
}

impl Default for SketcherConfig {
    fn default() -> Self {
        SketcherConfig {
            // The paper's prototype holds 22 million entries in under 1 GB; a million is a
            // modest default for a gateway shard.
            max_entries: 1_000_000,
            auto_blacklist: true,
            // "More than half of the last eight".
            transition_window: 8,
            transition_threshold: 4,
            blacklist_cooldown_us: 10_000_000,
        }
    }
}

/// What is wrong with a configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("max_entries must be at least 1 (a history table that holds nothing never allows a fast read)")]
    NoEntries,
    #[error("transition_window must be between 1 and 64, not {0}")]
    Window(u8),
    #[error("transition_threshold ({threshold}) must be below transition_window ({window}), or automatic blacklisting can never trigger")]
    Threshold { threshold: u8, window: u8 },
    #[error("blacklist_cooldown_us must be at least 1 when auto_blacklist is on")]
    NoCooldown,
    #[error("vnodes_per_shard must be between 1 and {max}, not {got}")]
    Vnodes { got: u32, max: u32 },
    #[error(
        "handover_us must be at least 1 if set (use None to settle hand-overs only explicitly)"
    )]
    NoHandoverTime,
}

impl SketcherConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_entries == 0 {
            return Err(ConfigError::NoEntries);
        }
        if self.transition_window == 0 || self.transition_window > 64 {
            return Err(ConfigError::Window(self.transition_window));
        }
        if self.transition_threshold >= self.transition_window {
            return Err(ConfigError::Threshold {
                threshold: self.transition_threshold,
                window: self.transition_window,
            });
        }
        if self.auto_blacklist && self.blacklist_cooldown_us == 0 {
            return Err(ConfigError::NoCooldown);
        }
        Ok(())
    }
}

/// Settings of a sharded sketching core ([`crate::ShardedSketcher`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardingConfig {
    /// Virtual nodes per shard on the consistent-hashing ring; more spread the load more
    /// evenly and move less per membership change.
    pub vnodes_per_shard: u32,
    /// A hand-over settles by itself this long (microseconds of `now`) after the membership
    /// change; `None` settles only on an explicit `settle()`. It must exceed the longest time
    /// a request routed under the old membership can still be in flight (see the crate doc).
    pub handover_us: Option<u64>,
}

/// The largest number of virtual nodes per shard accepted (keeps the ring small).
pub const MAX_VNODES: u32 = 4096;

impl Default for ShardingConfig {
    fn default() -> Self {
        ShardingConfig {
            vnodes_per_shard: 128,
            handover_us: Some(10_000_000),
        }
    }
}

impl ShardingConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.vnodes_per_shard == 0 || self.vnodes_per_shard > MAX_VNODES {
            return Err(ConfigError::Vnodes {
                got: self.vnodes_per_shard,
                max: MAX_VNODES,
            });
        }
        if self.handover_us == Some(0) {
            return Err(ConfigError::NoHandoverTime);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(SketcherConfig::default().validate(), Ok(()));
        assert_eq!(ShardingConfig::default().validate(), Ok(()));
    }

    #[test]
    fn invalid_configs_say_what_is_wrong() {
        let bad = |f: fn(&mut SketcherConfig)| {
            let mut c = SketcherConfig::default();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert_eq!(bad(|c| c.max_entries = 0), ConfigError::NoEntries);
        assert_eq!(bad(|c| c.transition_window = 0), ConfigError::Window(0));
        assert_eq!(bad(|c| c.transition_window = 65), ConfigError::Window(65));
        assert_eq!(
            bad(|c| c.transition_threshold = 8),
            ConfigError::Threshold {
                threshold: 8,
                window: 8
            }
        );
        assert_eq!(
            bad(|c| c.blacklist_cooldown_us = 0),
            ConfigError::NoCooldown
        );
        let mut off = SketcherConfig {
            auto_blacklist: false,
            blacklist_cooldown_us: 0,
            ..SketcherConfig::default()
        };
        assert_eq!(off.validate(), Ok(()));
        off.max_entries = 0;
        assert!(off
            .validate()
            .unwrap_err()
            .to_string()
            .contains("max_entries"));

        let mut s = ShardingConfig {
            vnodes_per_shard: 0,
            ..ShardingConfig::default()
        };
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("vnodes_per_shard"));
        s.vnodes_per_shard = 1;
        s.handover_us = Some(0);
        assert_eq!(s.validate(), Err(ConfigError::NoHandoverTime));
        s.handover_us = None;
        assert_eq!(s.validate(), Ok(()));
    }
}
