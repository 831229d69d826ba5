//! The applications a node binary can run, by name.
//!
//! A cluster file says which application its cluster replicates (`app = "..."`); a node binary
//! is built with some applications and registers each under its name. At start-up the node
//! looks the cluster's application up here and refuses to start, naming it, if this binary was
//! built without it: an execution replica running another application than its peers would
//! answer differently from them on every request.
//!
//! The registry keeps, per name, a constructor of the concrete application type, and erases
//! the type only at the point where the execution replica's thread is spawned. So
//! `ExecReplica<A>` is monomorphised for each application, every method of
//! [`plumb_app::Application`] (default methods included) is the application's own, and nothing
//! forwards calls through a `Box<dyn Application>` that could miss one.

use crate::status::{Observed, ReplicaHost};
use plumb_app::Application;
use plumb_cluster::Cluster;
use plumb_core::{Recovered, Stage, StageContext};
use plumb_exec::ExecReplica;
use plumb_runtime::{Mailbox, Outbox, Runner, StageShared};
use plumb_storage::Store;
use plumb_wire::Principal;
use plumb_zz::Sleeper;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;

/// The applications a node binary can run, each under the name a cluster file uses for it in
/// `app = "..."`.
///
/// ```
/// use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
/// use plumb_crypto::Digest;
/// use plumb_wire::{ClientId, Seq};
///
/// /// An application that keeps nothing and answers every request with an empty reply.
/// #[derive(Default)]
/// struct Nothing;
///
/// impl Application for Nothing {
///     fn execute(&mut self, _: Seq, batch: &[Command<'_>], _: NonDeterminism) -> BatchOutput {
///         BatchOutput { replies: vec![Vec::new(); batch.len()], pushes: Vec::new() }
///     }
///     fn execute_read_only(&self, _: ClientId, _: &[u8]) -> Vec<u8> {
///         Vec::new()
///     }
///     fn take_checkpoint(&mut self) -> Vec<u8> {
///         Vec::new()
///     }
///     fn load_checkpoint(&mut self, _: &[u8]) -> Result<(), LoadError> {
///         Ok(())
///     }
///     fn state_digest(&self) -> Digest {
///         Digest::ZERO
///     }
/// }
///
/// let apps = plumb_node::Apps::new().with("nothing", Nothing::default);
/// assert!(apps.has("nothing"));
/// assert_eq!(apps.names().collect::<Vec<_>>(), ["nothing"]);
/// ```
#[derive(Clone, Default)]
pub struct Apps {
    by_name: BTreeMap<String, Arc<dyn LaunchExec>>,
}

impl Apps {
    /// A registry with no application: add them with [`Apps::with`].
    pub fn new() -> Apps {
        Apps::default()
    }

    /// Register the application `name`, built by `make` (once per execution replica the node
    /// hosts, at start-up, before any checkpoint is loaded into it).
    ///
    /// # Panics
    ///
    /// If `name` is registered already, or is not a name a cluster file can give (letters,
    /// digits, `-` and `_`, at most 64): both are mistakes in the binary, not in its input.
    pub fn with<A, F>(mut self, name: &str, make: F) -> Apps
    where
        A: Application + Send + 'static,
        F: Fn() -> A + Send + Sync + 'static,
    {
        assert!(
            plumb_cluster::valid_app_name(name),
            "{name:?} cannot name an application: use letters, digits, `-` and `_` (at most 64)"
        );
        let previous = self
            .by_name
            .insert(name.to_string(), Arc::new(Constructor(make)));
        assert!(
            previous.is_none(),
            "the application {name:?} is registered twice"
        );
        self
    }

    /// Whether an application is registered under `name`.
    pub fn has(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The registered names, in alphabetical order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// `Ok` if this registry has the application `cluster` replicates; otherwise an error for
    /// the operator naming that application and the ones this binary has.
    pub fn check(&self, cluster: &Cluster) -> Result<(), String> {
        self.launcher(cluster).map(|_| ())
    }

    pub(crate) fn launcher(&self, cluster: &Cluster) -> Result<&dyn LaunchExec, String> {
        match self.by_name.get(&cluster.app) {
            Some(launch) => Ok(&**launch),
            None => Err(format!(
                "{}: the cluster replicates the application {:?}, which this binary was built without (it has {}); run the nodes with the binary that registers {:?}, or correct `app` in the file",
                cluster.path.display(),
                cluster.app,
                self.listed(),
                cluster.app
            )),
        }
    }

    fn listed(&self) -> String {
        if self.by_name.is_empty() {
            "none".to_string()
        } else {
            let names: Vec<String> = self.names().map(|n| format!("{n:?}")).collect();
            names.join(", ")
        }
    }
}

impl fmt::Debug for Apps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

/// What a replica's thread is made of, apart from the replica itself.
pub(crate) struct StageThread {
    pub store: Store,
    pub mailbox: Arc<Mailbox<()>>,
    pub outbox: Arc<dyn Outbox>,
    pub host: ReplicaHost,
    pub shared: Arc<StageShared>,
    pub name: String,
}

impl StageThread {
    /// Starts the thread that runs `stage`.
    pub fn spawn<S: Stage + Send + 'static>(self, stage: S) -> std::io::Result<JoinHandle<()>> {
        Runner::new(
            stage,
            self.store,
            self.mailbox,
            self.outbox,
            self.host,
            self.shared,
        )?
        .spawn(self.name)
    }
}

/// Builds one application's execution replica and starts its thread: the one place the node
/// needs the application's type.
pub(crate) trait LaunchExec: Send + Sync {
    fn launch(
        &self,
        ctx: StageContext,
        recovered: Recovered,
        thread: StageThread,
        observed: &Observed,
    ) -> std::io::Result<JoinHandle<()>>;
}

struct Constructor<F>(F);

impl<A, F> LaunchExec for Constructor<F>
where
    A: Application + Send + 'static,
    F: Fn() -> A + Send + Sync,
{
    fn launch(
        &self,
        ctx: StageContext,
        recovered: Recovered,
        t: StageThread,
        observed: &Observed,
    ) -> std::io::Result<JoinHandle<()>> {
        if let Principal::Exec(e) = ctx.keys.me() {
            if ctx.config.is_sleeper(e.0) {
                let sleeper = Sleeper::new(ctx, (self.0)(), recovered);
                match sleeper.awake() {
                    Some(replica) => observed.recovered_exec(replica.next_seq().minus(1)),
                    None => observed.sleeping(),
                }
                return t.spawn(sleeper);
            }
        }
        let replica = ExecReplica::new(ctx, (self.0)(), recovered);
        observed.recovered_exec(replica.next_seq().minus(1));
        t.spawn(replica)
    }
}
