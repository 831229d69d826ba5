//! The end of a run: the end-of-run checks, and the report.

use super::{StageBox, World};
use crate::app::SimApp;
use crate::check::{self, ClientEnd, ExecEnd};
use crate::faults::secs;
use crate::SeedReport;
use plumb_app::Application;
use plumb_wire::Principal;

impl<A: SimApp> World<'_, A> {
    /// Judge the run: the end-of-run checks and the report.
    pub fn finish(mut self, u: u16, r: u16) -> SeedReport {
        let execs = self.exec_ends();
        let clients = self.client_ends();
        check::check_sequence(&mut self.checker, &self.workload);
        let reference = check::check_replies(self.app, &mut self.checker, &self.workload, &execs);
        self.check_app_states();
        let time_bound = self.time_bound();
        check::check_agreed_time(&mut self.checker, &self.workload, time_bound);
        check::check_one_life(&mut self.checker, &self.workload);
        check::check_leases(&mut self.checker, &self.workload, time_bound);
        // Under D-Prophecy a faulty client's ordered read moves what replicas vouch for.
        let faulty = if self.sketcher.as_ref().is_some_and(|s| s.distributed()) {
            check::faulty_ordered_ops(&self.checker, &self.workload, &reference)
        } else {
            Vec::new()
        };
        check::check_linearizability(
            self.app,
            &mut self.checker,
            &self.workload,
            &faulty,
            self.sketcher.is_some(),
            self.check_max_steps,
        );
        let liveness_checked = self.cfg.plan.liveness && !self.stormed;
        if liveness_checked {
            check::check_liveness(
                &mut self.checker,
                &self.workload,
                &clients,
                self.cfg.heal_at,
                self.cfg.end_at,
            );
            self.stats.slowest_settled = check::check_latency_bound(
                &mut self.checker,
                &self.workload,
                self.cfg.settled_at(),
                self.cfg.end_at,
                self.cfg.latency_bound(),
            );
        }
        if self
            .checker
            .violations()
            .iter()
            .any(|v| v.property.starts_with("LL"))
        {
            let text = self.progress_report();
            self.checker.warn(text);
        }
        for node in &mut self.nodes {
            if let Some(stage) = node.stage.as_mut() {
                self.stats.counters.add_all(stage.stage().counters());
            }
        }
        if let Some(k) = self.sketcher_counters() {
            let c = &mut self.stats.counters;
            c.add_n("sketcher-fast-hits", k.fast_hits);
            c.add_n("sketcher-mismatches", k.mismatches);
            c.add_n("sketcher-fallbacks", k.fallbacks);
            c.add_n("sketcher-evictions", k.evictions);
            c.add_n("sketcher-handover-replicated", k.handover_replicated);
            c.add_n("sketcher-auto-blacklisted", k.auto_blacklisted);
            c.add_n("sketcher-older-replies", k.stale_replies);
        }
        self.stats.agreed_batches = self.checker.agreed.len() as u64;
        self.stats.sim_end = self.now;
        let trace_digest = self.trace.digest();
        let (violations, suppressed, undecided, warnings) = self.checker.into_verdicts();
        SeedReport {
            app: self.app.name(),
            seed: self.cfg.seed,
            u,
            r,
            sketcher: self.sketcher.is_some(),
            // What was asked for is set by `run_app_seed`; until then, what the run did.
            partial: self.cfg.protocol.load_objects_on_demand,
            on_demand: self.cfg.protocol.load_objects_on_demand,
            zz: self.cfg.protocol.zz,
            tentative: None,
            extra_exec: self.cfg.protocol.quorums.exec - self.cfg.faults().min_exec(),
            liveness_checked,
            violations,
            suppressed_violations: suppressed,
            undecided,
            warnings,
            stats: self.stats,
            trace_digest,
        }
    }

    /// How far agreed time may be from global time (check/time.rs): the skew correct backups
    /// allow, plus the error of the furthest correct order replica's clock in this run.
    fn time_bound(&self) -> plumb_wire::Micros {
        let plan = &self.cfg.plan;
        let error = plan
            .clocks
            .iter()
            .filter(|(p, _)| matches!(p, Principal::Order(_)) && !plan.is_byzantine(**p))
            .map(|(_, c)| c.max_error(self.cfg.end_at))
            .max()
            .unwrap_or(0);
        self.cfg.protocol.max_clock_skew_us + error
    }

    fn exec_ends(&self) -> Vec<ExecEnd> {
        self.nodes
            .iter()
            .filter(|n| n.correct)
            .filter_map(|n| {
                let e = n.stage.as_ref()?.exec()?;
                Some(ExecEnd {
                    p: n.p,
                    executed: e.next_seq().minus(1),
                    state: (!e.holds_part()).then(|| e.app().state_digest()),
                })
            })
            .collect()
    }

    /// The application's own invariants on every correct execution replica's final state.
    fn check_app_states(&mut self) {
        for n in self.nodes.iter().filter(|n| n.correct) {
            if let Some(e) = n.stage.as_ref().and_then(StageBox::exec) {
                for v in self.app.check_state(e.app()) {
                    let detail = format!("{}: {}", n.p, v.detail);
                    self.checker.violate(v.property, detail);
                }
            }
        }
    }

    fn client_ends(&self) -> Vec<ClientEnd> {
        self.nodes
            .iter()
            .filter_map(|n| match (&n.stage, n.p) {
                (Some(StageBox::Client(cl)), Principal::Client(id)) => Some(ClientEnd {
                    id,
                    outstanding: cl.outstanding(),
                }),
                _ => None,
            })
            .collect()
    }

    /// Where every replica stands at the end: the first thing to look at when a run stalls.
    fn progress_report(&self) -> String {
        let mut parts = Vec::new();
        match self.checker.agreed.iter().next_back() {
            Some((seq, b)) => parts.push(format!(
                "last agreed batch {seq} (first delivered at {})",
                secs(b.at)
            )),
            None => parts.push("no batch agreed".to_string()),
        }
        for n in &self.nodes {
            let tag = if n.correct { "" } else { " (byzantine)" };
            let state = match &n.stage {
                None => "down".to_string(),
                Some(StageBox::Order(o)) => format!(
                    "view {}{} committed {} stable {}",
                    o.view(),
                    if o.is_view_active() {
                        ""
                    } else {
                        " (changing)"
                    },
                    o.last_committed(),
                    o.stable_checkpoint()
                ),
                Some(StageBox::Exec(e)) => format!("next {}", e.next_seq()),
                Some(StageBox::Sleeper(s)) => match s.awake() {
                    Some(e) => format!("woken, next {}", e.next_seq()),
                    None => "asleep".to_string(),
                },
                Some(StageBox::Auth(a)) => format!("{} pending", a.pending_count()),
                Some(StageBox::Client(_)) => continue,
            };
            parts.push(format!("{}{tag}: {state}", n.p));
        }
        for (c, load) in self.workload.clients.iter().enumerate() {
            let Some(nc) = load
                .pending
                .and_then(|i| load.history.get(i))
                .and_then(|r| r.ncs.last())
            else {
                continue;
            };
            let auths: Vec<String> = self
                .nodes
                .iter()
                .filter_map(|n| match &n.stage {
                    Some(StageBox::Auth(a)) => Some(format!(
                        "{} {}",
                        n.p,
                        a.last_sent_nc(c as u32)
                            .map_or("-".to_string(), |x| x.to_string())
                    )),
                    _ => None,
                })
                .collect();
            parts.push(format!(
                "c{c} waits for request {nc}, auth last sent: {}",
                auths.join(", ")
            ));
        }
        format!("progress at end: {}", parts.join("; "))
    }
}
