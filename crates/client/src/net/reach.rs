//! Whether the nodes a client has connections to host enough replicas for a request to
//! complete: `n_auth - u` authentication replicas (the client's preferred quorum may need all
//! of them, and retransmissions go to every one) and `n_exec - u` execution replicas (at least
//! `r + 1` of which must answer alike). Counted per replica, not per node, because a node may
//! host any subset of the roles.

use plumb_cluster::Cluster;
use plumb_wire::Principal;

/// Each node's authentication and execution replica counts, and what is needed.
#[derive(Debug, Clone)]
pub(crate) struct Reachability {
    /// `(node, auth replicas on it, exec replicas on it)`.
    nodes: Vec<(u16, usize, usize)>,
    pub(crate) auth_needed: usize,
    pub(crate) exec_needed: usize,
}

impl Reachability {
    pub(crate) fn of(cluster: &Cluster) -> Reachability {
        let q = cluster.quorums();
        let u = usize::from(q.faults.u);
        let nodes = cluster
            .nodes
            .iter()
            .map(|n| {
                let count =
                    |f: fn(&Principal) -> bool| n.principals.iter().filter(|p| f(p)).count();
                (
                    n.id,
                    count(|p| matches!(p, Principal::Auth(_))),
                    count(|p| matches!(p, Principal::Exec(_))),
                )
            })
            .collect();
        Reachability {
            nodes,
            auth_needed: q.auth.saturating_sub(u),
            exec_needed: q.exec.saturating_sub(u).max(q.reply()),
        }
    }

    /// Whether the nodes for which `up` holds are enough.
    pub(crate) fn enough(&self, up: impl Fn(u16) -> bool) -> bool {
        let (mut auth, mut exec) = (0, 0);
        for &(id, a, e) in &self.nodes {
            if up(id) {
                auth += a;
                exec += e;
            }
        }
        auth >= self.auth_needed && exec >= self.exec_needed
    }

    /// The nodes for which `up` holds, and the others.
    pub(crate) fn split(&self, up: impl Fn(u16) -> bool) -> (Vec<u16>, Vec<u16>) {
        self.nodes.iter().map(|n| n.0).partition(|&id| up(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(
        nodes: Vec<(u16, usize, usize)>,
        auth_needed: usize,
        exec_needed: usize,
    ) -> Reachability {
        Reachability {
            nodes,
            auth_needed,
            exec_needed,
        }
    }

    #[test]
    fn co_located_u1_r1_needs_any_three_of_four_nodes_with_two_execution_replicas() {
        // `plumb init` for u=1 r=1: 4 auth, 4 order, 3 exec (nodes 0-2).
        let r = layout(vec![(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 0)], 3, 2);
        assert!(r.enough(|_| true));
        assert!(r.enough(|n| n != 0), "one node down is what u=1 tolerates");
        assert!(r.enough(|n| n != 3));
        assert!(!r.enough(|n| n >= 2), "two nodes down is not");
        assert_eq!(r.split(|n| n % 2 == 0), (vec![0, 2], vec![1, 3]));
    }

    #[test]
    fn split_roles_count_replicas_not_nodes() {
        // `--split` for u=1 r=0: nodes 0-2 auth, 3-5 order, 6-8 exec.
        let mut nodes: Vec<_> = (0..3).map(|i| (i, 1, 0)).collect();
        nodes.extend((3..6).map(|i| (i, 0, 0)));
        nodes.extend((6..9).map(|i| (i, 0, 1)));
        let r = layout(nodes, 2, 2);
        assert!(r.enough(|n| n != 0 && n != 6));
        assert!(
            !r.enough(|n| n != 6 && n != 7),
            "only one execution replica left"
        );
        assert!(
            !r.enough(|n| n >= 2),
            "only one authentication replica left"
        );
    }
}
