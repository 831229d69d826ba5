//! The selector's decisions carried out on an application (seed 003 §4.1): which agreed
//! commands run here, which are held back, and the catch-ups that bring objects up to date
//! before a command that needs them.
//!
//! Work comes in *jobs*, in two steps, because objects to load come from other replicas: a
//! job names the objects to load as of the certified checkpoint, the caller fetches them
//! (verified against that checkpoint's partition roots) and hands them to [`Execution::run`],
//! which loads them, replays the held commands the catch-ups named, each with its own
//! batch's agreed time and seed ([`Application::execute_selected`]), and answers the commands
//! that run here. One job at a time: the next job's decisions assume this one ran.
//!
//! Loading every object of a job before any of its commands runs is what running each
//! catch-up just before its command would do: an object is loaded only while no command run
//! here since the certified checkpoint touched it ([`Selector::check_invariants`]), so none
//! of the job's earlier commands reads or writes it.

use crate::selector::{CatchUp, Decision, Selector};
use plumb_app::{Application, Command, LoadError, NonDeterminism, ObjectId, ObjectWrite};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Position, ReqNo, Seq};
use std::collections::BTreeMap;

/// An agreed command, owned, so that it can be held until it runs here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgreedCommand {
    pub client: ClientId,
    pub nc: ReqNo,
    pub op: Vec<u8>,
    /// Its request identity ([`Command::request`]).
    pub request: Digest,
}

impl AgreedCommand {
    pub fn of(command: &Command<'_>) -> AgreedCommand {
        AgreedCommand {
            client: command.client,
            nc: command.nc,
            op: command.op.to_vec(),
            request: command.request,
        }
    }

    fn command(&self) -> Command<'_> {
        Command {
            client: self.client,
            nc: self.nc,
            op: &self.op,
            request: self.request,
        }
    }
}

/// A command admitted and not yet run here, with its batch's agreed time and seed.
#[derive(Debug)]
struct Held {
    command: AgreedCommand,
    nd: NonDeterminism,
}

/// What a job does once its objects are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Run a held command to bring objects up to date; its reply went out from the
    /// replicas that ran it as it came.
    Replay(Position),
    /// Run a command and answer it.
    Answer(Position),
}

/// Work for the application, to run with [`Execution::run`] once the objects of `load` are
/// fetched as of the certified checkpoint `as_of`.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a job changes nothing until it runs, and later jobs assume it ran"]
pub struct Job {
    pub load: Vec<ObjectId>,
    pub as_of: Seq,
    number: u64,
    steps: Vec<Step>,
}

impl Job {
    /// The commands this job answers, in the order it runs them.
    pub fn answers(&self) -> impl Iterator<Item = Position> + '_ {
        self.steps.iter().filter_map(|s| match s {
            Step::Answer(p) => Some(*p),
            Step::Replay(_) => None,
        })
    }

    /// How many held commands it replays.
    pub fn replays(&self) -> usize {
        self.steps.len() - self.answers().count()
    }
}

/// What a job produced: a reply for each command it answers, by position, and the pushes of
/// those commands.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Answers {
    pub replies: Vec<(Position, Vec<u8>)>,
    pub pushes: Vec<(ClientId, Vec<u8>)>,
}

/// Why a job could not run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RunError {
    /// The application has no [`Application::execute_selected`]: selective execution must
    /// be refused for it before it starts.
    #[error("the application cannot execute some commands of a batch (execute_selected)")]
    Unsupported,
    /// An object verified against the certified checkpoint did not load.
    #[error("object {0:?} did not load: {1}")]
    Load(ObjectId, LoadError),
}

/// Selective execution on one execution replica: its [`Selector`] and the commands held here.
#[derive(Debug)]
pub struct Execution {
    selector: Selector,
    held: BTreeMap<Position, Held>,
    /// Jobs made and jobs run: one at a time.
    made: u64,
    ran: u64,
}

impl Execution {
    pub fn new(selector: Selector) -> Execution {
        Execution {
            selector,
            held: BTreeMap::new(),
            made: 0,
            ran: 0,
        }
    }

    pub fn selector(&self) -> &Selector {
        &self.selector
    }

    /// The commands held here between jobs, in agreed order: those the selector stored.
    pub fn held(&self) -> impl Iterator<Item = Position> + '_ {
        self.held.keys().copied()
    }

    /// Agreed batch `seq`, with each command's access set: the job that answers those that
    /// run here, after what they need; the others are held.
    pub fn admit(
        &mut self,
        seq: Seq,
        batch: Vec<(AgreedCommand, plumb_app::AccessSet)>,
        nd: NonDeterminism,
    ) -> Job {
        let mut job = self.job(Vec::new(), self.selector.certified());
        for (index, (command, access)) in batch.into_iter().enumerate() {
            let index = u32::try_from(index).expect("a batch holds fewer than 2^32 commands");
            let pos = Position { seq, index };
            self.held.insert(pos, Held { command, nd });
            match self.selector.insert(pos, &access) {
                Decision::Stored => {}
                Decision::Execute(catch_up) => add(&mut job, catch_up, pos),
            }
        }
        job
    }

    /// Run the held command at `pos` now (seed 003 Figure 4): its client's vote came up short.
    /// `None` if it is not held: it ran here already, or a certified checkpoint let it go.
    pub fn force(&mut self, pos: Position) -> Option<Job> {
        let catch_up = self.selector.force(pos)?;
        let mut job = self.job(Vec::new(), catch_up.as_of);
        add(&mut job, catch_up, pos);
        Some(job)
    }

    /// Bring every object up to date (when idle, seed 003 §5.4, or to hold the whole state).
    pub fn catch_up_all(&mut self) -> Job {
        let catch_up = self.selector.catch_up_all();
        self.replay_only(catch_up)
    }

    /// Bring partition `p` up to date, to report its root at the checkpoint just reached
    /// ([`Selector::catch_up_partition`]).
    pub fn catch_up_partition(&mut self, p: crate::Partition) -> Job {
        let catch_up = self.selector.catch_up_partition(p);
        self.replay_only(catch_up)
    }

    /// A checkpoint at `seq` is certified ([`Selector::on_certified`]): the commands held from
    /// its batches are let go of. Only between jobs.
    pub fn on_certified(&mut self, seq: Seq) {
        assert_eq!(
            self.made, self.ran,
            "checkpoint certified while a job is under way"
        );
        self.selector.on_certified(seq);
        self.held = self.held.split_off(&Position {
            seq: self.selector.certified().next(),
            index: 0,
        });
    }

    /// Run `job` on `app`, with `loaded` the job's objects as of its checkpoint, verified.
    ///
    /// # Panics
    /// If `job` is not the next one made, or `loaded` does not hold exactly its objects: the
    /// caller's bookkeeping is broken, and running would diverge silently.
    pub fn run(
        &mut self,
        app: &mut dyn Application,
        job: Job,
        loaded: Vec<ObjectWrite>,
    ) -> Result<Answers, RunError> {
        assert_eq!(job.number, self.ran, "jobs run in the order they were made");
        self.ran += 1;
        let mut ids: Vec<ObjectId> = loaded.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        assert_eq!(ids, job.load, "loaded objects are the job's");
        if !loaded.is_empty() {
            let objects = app.objects().ok_or(RunError::Unsupported)?;
            for (id, bytes) in loaded {
                objects
                    .load_object(id, bytes.as_deref())
                    .map_err(|e| RunError::Load(id, e))?;
            }
        }
        let mut answers = Answers::default();
        // Consecutive steps of one batch run in one call, replays apart from answers so that
        // only answered commands' pushes go out (a replayed one's went out where it ran).
        for run in job.steps.chunk_by(|a, b| {
            position(a).seq == position(b).seq
                && matches!(a, Step::Answer(_)) == matches!(b, Step::Answer(_))
        }) {
            let seq = position(&run[0]).seq;
            let held: Vec<(Step, Held)> = run
                .iter()
                .map(|s| {
                    let held = self.held.remove(&position(s));
                    (*s, held.expect("a job's commands are held until they run"))
                })
                .collect();
            let commands: Vec<(usize, Command<'_>)> = held
                .iter()
                .map(|(s, h)| (position(s).index as usize, h.command.command()))
                .collect();
            let out = app
                .execute_selected(seq, &commands, held[0].1.nd)
                .ok_or(RunError::Unsupported)?;
            assert_eq!(out.replies.len(), commands.len(), "one reply per command");
            if let Step::Answer(_) = run[0] {
                let positions = held.iter().map(|(s, _)| position(s));
                answers.replies.extend(positions.zip(out.replies));
                answers.pushes.extend(out.pushes);
            }
        }
        Ok(answers)
    }

    /// A job that only brings objects up to date: nothing to answer.
    fn replay_only(&mut self, catch_up: CatchUp) -> Job {
        let mut job = self.job(catch_up.load, catch_up.as_of);
        job.steps = catch_up.replay.into_iter().map(Step::Replay).collect();
        job
    }

    fn job(&mut self, load: Vec<ObjectId>, as_of: Seq) -> Job {
        assert_eq!(
            self.made, self.ran,
            "one job at a time: the next decisions assume it ran"
        );
        self.made += 1;
        Job {
            load,
            as_of,
            number: self.made - 1,
            steps: Vec::new(),
        }
    }
}

/// Add `catch_up` and then the command at `pos` to `job`.
fn add(job: &mut Job, catch_up: CatchUp, pos: Position) {
    debug_assert_eq!(
        job.as_of, catch_up.as_of,
        "one certified checkpoint per job"
    );
    job.load.extend(catch_up.load);
    job.load.sort_unstable();
    job.steps
        .extend(catch_up.replay.into_iter().map(Step::Replay));
    job.steps.push(Step::Answer(pos));
}

fn position(step: &Step) -> Position {
    match step {
        Step::Replay(p) | Step::Answer(p) => *p,
    }
}
