//! The applications a simulator binary can run, by name: what `plumb sim --app NAME` looks up.
//!
//! The simulator core depends on no application: each [`SimApp`] adapter is registered by the
//! binary that links it, as a node binary registers its applications (`plumb_node::Apps`).
//! Registering erases the adapter's types behind [`Simulated`]; the seed itself still runs
//! monomorphised for the application ([`run_app_seed`]).

use crate::{app_seed_config, run_app_seed, SeedReport, SimApp, SimConfig, SimOptions};

/// A simulator application with its types erased.
pub trait Simulated: Sync {
    /// The name `--app` takes.
    fn name(&self) -> &'static str;
    /// The configuration one seed runs with (the application's adjustments included).
    fn seed_config(&self, opts: &SimOptions) -> SimConfig;
    /// Run one seed and judge it.
    fn run_seed(&self, opts: &SimOptions) -> SeedReport;
}

impl<A: SimApp> Simulated for A {
    fn name(&self) -> &'static str {
        SimApp::name(self)
    }

    fn seed_config(&self, opts: &SimOptions) -> SimConfig {
        app_seed_config(self, opts)
    }

    fn run_seed(&self, opts: &SimOptions) -> SeedReport {
        run_app_seed(self, opts)
    }
}

/// The applications a simulator binary runs, in the order they were registered; the first is
/// the default.
#[derive(Clone, Default)]
pub struct SimApps {
    apps: Vec<&'static dyn Simulated>,
}

impl SimApps {
    /// A registry with no application: add them with [`SimApps::with`].
    pub fn new() -> SimApps {
        SimApps::default()
    }

    /// Register `app` under its [`SimApp::name`].
    ///
    /// # Panics
    ///
    /// If an application of that name is registered already: a mistake in the binary.
    pub fn with(mut self, app: &'static dyn Simulated) -> SimApps {
        assert!(
            self.get(app.name()).is_none(),
            "simulator application {:?} registered twice",
            app.name()
        );
        self.apps.push(app);
        self
    }

    /// The application registered as `name`.
    pub fn get(&self, name: &str) -> Option<&'static dyn Simulated> {
        self.apps.iter().copied().find(|a| a.name() == name)
    }

    /// The application `--app` names, or the first registered without one; an error that
    /// names the registered ones otherwise.
    pub fn chosen(&self, asked: Option<&str>) -> Result<&'static dyn Simulated, String> {
        match asked {
            None => self
                .apps
                .first()
                .copied()
                .ok_or_else(|| "this binary registers no simulator application".to_string()),
            Some(name) => self.get(name).ok_or_else(|| {
                let names: Vec<&str> = self.names().collect();
                format!(
                    "--app {name:?}: no simulator application of that name (this binary has {})",
                    names.join(", ")
                )
            }),
        }
    }

    /// The command that replays `report`'s seed with this registry's binary: its default
    /// application (the first registered) goes without `--app`, so the key-value store's replay
    /// lines in `plumb sim` stay as they always were.
    pub fn replay_command(&self, report: &SeedReport) -> String {
        report.replay_command_with_default(self.names().next())
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.apps.iter().map(|a| a.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;
    use crate::test_kv::Kv;

    #[test]
    fn looks_applications_up_by_name_and_defaults_to_the_first() {
        let apps = SimApps::new().with(&Kv).with(&Spec);
        assert_eq!(apps.names().collect::<Vec<_>>(), ["kv", "spec"]);
        assert_eq!(apps.chosen(None).unwrap().name(), "kv");
        assert_eq!(apps.chosen(Some("spec")).unwrap().name(), "spec");
        let e = apps.chosen(Some("bank")).err().unwrap();
        assert!(e.contains("\"bank\"") && e.contains("kv, spec"), "{e}");
        assert!(SimApps::new().chosen(None).is_err());
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn refuses_a_name_twice() {
        let _ = SimApps::new().with(&Kv).with(&Kv);
    }

    #[test]
    fn the_erased_configuration_is_the_applications_own() {
        let opts = SimOptions::new(7, 1, 1);
        let erased = SimApps::new()
            .with(&Spec)
            .chosen(None)
            .unwrap()
            .seed_config(&opts);
        assert_eq!(
            format!("{erased}"),
            format!("{}", app_seed_config(&Spec, &opts))
        );
    }
}
