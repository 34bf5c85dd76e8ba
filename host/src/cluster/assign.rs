//! Who runs what: the leader's incremental, cooperative assignment of connectors and tasks to
//! the workers of a group, and the formats of what members and the leader exchange through the
//! group coordinator (JSON inside the JoinGroup metadata and the SyncGroup assignment).
//!
//! Cooperative means a rebalance only ever takes work away (revokes) or hands out work nobody
//! holds; a revoked item is handed to another worker in the next round, after its old owner
//! reported in its metadata that it no longer runs it. So no item runs on two workers at once.
//!
//! What a member reports running is believed only as far as the previous round gave it that
//! work (`Backing`): any client able to join the group writes metadata, and a claim the leader
//! believed would keep the work (and the requests for it) with that client. Every member learns
//! each round's decisions from its own assignment (`Assignor::learn`), so a new leader that took
//! part in the previous round checks claims as the old leader would have. A leader that did not
//! (the first round of a group, or one that missed the last round) believes what members report,
//! as it cannot tell their work from claims; that is the remaining exposure to a client joining
//! the group, which SASL and group ACLs close.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::storage::ConfigSnapshot;

/// The version of the formats below; a member speaking another one is refused by name.
pub const PROTOCOL: &str = "wharf-1";

pub use wharf_connect::model::TaskId;

/// A set of connectors and tasks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Work {
    pub connectors: BTreeSet<String>,
    pub tasks: BTreeSet<TaskId>,
}

impl Work {
    /// Everything the config names: every connector, and every task of its committed task configs.
    pub fn of(snapshot: &ConfigSnapshot) -> Work {
        let mut work = Work::default();
        for (name, entry) in &snapshot.connectors {
            work.connectors.insert(name.clone());
            for task in 0..entry.tasks.as_ref().map_or(0, |t| t.len() as u32) {
                work.tasks.insert(TaskId { connector: name.clone(), task });
            }
        }
        work
    }

    pub fn is_empty(&self) -> bool {
        self.connectors.is_empty() && self.tasks.is_empty()
    }

    pub fn minus(&self, other: &Work) -> Work {
        Work {
            connectors: self.connectors.difference(&other.connectors).cloned().collect(),
            tasks: self.tasks.difference(&other.tasks).cloned().collect(),
        }
    }

    pub fn intersect(&self, other: &Work) -> Work {
        Work {
            connectors: self.connectors.intersection(&other.connectors).cloned().collect(),
            tasks: self.tasks.intersection(&other.tasks).cloned().collect(),
        }
    }

    pub fn extend(&mut self, other: &Work) {
        self.connectors.extend(other.connectors.iter().cloned());
        self.tasks.extend(other.tasks.iter().cloned());
    }

    /// At most `SAMPLE` names of each kind, escaped, for logs of work another client named.
    pub fn sample(&self) -> String {
        const SAMPLE: usize = 5;
        let connectors: Vec<&str> = self.connectors.iter().take(SAMPLE).map(String::as_str).collect();
        let tasks: Vec<String> = self.tasks.iter().take(SAMPLE).map(TaskId::to_string).collect();
        format!(
            "{} connector(s) {connectors:?}{}, {} task(s) {tasks:?}{}",
            self.connectors.len(),
            if self.connectors.len() > SAMPLE { " and more" } else { "" },
            self.tasks.len(),
            if self.tasks.len() > SAMPLE { " and more" } else { "" },
        )
    }

    /// "2 connectors (a, b), 3 tasks (a-0, a-1, b-0)", for logs.
    pub fn describe(&self) -> String {
        let connectors: Vec<&str> = self.connectors.iter().map(String::as_str).collect();
        let tasks: Vec<String> = self.tasks.iter().map(TaskId::to_string).collect();
        format!(
            "{} connector(s) [{}], {} task(s) [{}]",
            connectors.len(),
            connectors.join(", "),
            tasks.len(),
            tasks.join(", ")
        )
    }
}

/// What a worker tells the group when it joins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberMetadata {
    /// The REST URL other workers forward requests to.
    pub url: String,
    /// The worker id statuses carry.
    pub worker_id: String,
    /// How far this worker has read the config topic (the next offset to read).
    pub config_offset: i64,
    /// What it runs now.
    pub owned: Work,
}

/// What the leader hands each member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    /// The leader's member id and REST URL.
    pub leader: String,
    pub leader_url: String,
    /// The config topic offset the assignment was computed at; a member reads at least this
    /// far before it starts work.
    pub config_offset: i64,
    /// Everything this member runs from now on.
    pub owned: Work,
    /// What it must stop (and then rejoin, so the work can move).
    pub revoked: Work,
    /// When work of departed workers is held back: the time left until it moves.
    pub delay_ms: u64,
    /// Every member's REST URL and work, so that requests can be sent to the owner.
    pub members: BTreeMap<String, MemberView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberView {
    pub url: String,
    pub worker_id: String,
    pub owned: Work,
    /// What it was told to give up and may run until it rejoins: with `owned`, the claims the
    /// next round believes (absent from leaders of earlier releases).
    #[serde(default)]
    pub giving_up: Work,
}

/// Work that disappeared with departed workers, held back until `deadline`.
#[derive(Debug, Clone)]
struct Lost {
    work: Work,
    deadline: Instant,
}

/// What each member may run after the round of `generation` (member id → what it was handed
/// and what it was told to give up): the claims the next round believes.
#[derive(Debug, Clone)]
struct Backing {
    generation: i32,
    may_run: BTreeMap<String, Work>,
}

/// The leader's memory between rounds: what it handed out last, and what is waiting for a
/// departed worker to come back.
pub struct Assignor {
    max_delay: Duration,
    /// What each member was handed last round (member id → work).
    previous: BTreeMap<String, Work>,
    lost: Option<Lost>,
    /// The latest round this worker knows of, as leader or from its own assignment.
    backing: Option<Backing>,
}

/// The result of one round.
pub struct Round {
    pub assignments: BTreeMap<String, Assignment>,
    /// When work is held back: rejoin after this long so it can move.
    pub delay: Option<Duration>,
    /// What members reported running that the previous round did not give them (member id →
    /// work): handed out as if nobody ran it.
    pub ignored_claims: BTreeMap<String, Work>,
}

impl Assignor {
    pub fn new(max_delay: Duration) -> Self {
        Assignor { max_delay, previous: BTreeMap::new(), lost: None, backing: None }
    }

    /// Takes note of the round of `generation` from an assignment this worker received (every
    /// member's work is in it), so that, leading a later round, it believes only the claims
    /// that round backs.
    pub fn learn(&mut self, generation: i32, members: &BTreeMap<String, MemberView>) {
        if self.backing.as_ref().is_some_and(|b| b.generation > generation) {
            return;
        }
        let may_run = members
            .iter()
            .map(|(id, view)| {
                let mut work = view.owned.clone();
                work.extend(&view.giving_up);
                (id.clone(), work)
            })
            .collect();
        self.backing = Some(Backing { generation, may_run });
    }

    /// Assigns `desired` (everything the config at `config_offset` names) over `members`
    /// (member id → metadata) in round `generation`. `leader` is the leader's member id.
    pub fn assign(
        &mut self,
        leader: &str,
        generation: i32,
        members: &BTreeMap<String, MemberMetadata>,
        desired: &Work,
        config_offset: i64,
        now: Instant,
    ) -> Round {
        // Claims are believed as far as the round just before backs them; without that round
        // (see the module's note) as they are.
        let backing = self.backing.take().filter(|b| generation.checked_sub(1) == Some(b.generation));
        if backing.is_none() && members.values().any(|m| !m.owned.is_empty()) {
            tracing::info!(
                "generation {generation}: this leader does not know the assignment of the generation before, and \
                 believes the work members report running"
            );
        }
        let no_work = Work::default();
        // What each member keeps: what it owns, was given, still exists and nobody earlier claimed.
        let mut keep: BTreeMap<&str, Work> = BTreeMap::new();
        let mut revoke: BTreeMap<&str, Work> = BTreeMap::new();
        let mut backed: BTreeMap<&str, Work> = BTreeMap::new();
        let mut ignored_claims = BTreeMap::new();
        let mut claimed = Work::default();
        for (id, meta) in members {
            let believed = match &backing {
                Some(b) => meta.owned.intersect(b.may_run.get(id).unwrap_or(&no_work)),
                None => meta.owned.clone(),
            };
            let unbacked = meta.owned.minus(&believed);
            if !unbacked.is_empty() {
                tracing::warn!(
                    "generation {generation}: member {id:?} (worker {:?} at {:?}) reports running {}, which the \
                     assignment of generation {} did not give it; that work is handed out as if nobody ran it",
                    meta.worker_id,
                    meta.url,
                    unbacked.sample(),
                    generation.saturating_sub(1)
                );
                ignored_claims.insert(id.clone(), unbacked);
            }
            let kept = believed.intersect(desired).minus(&claimed);
            claimed.extend(&kept);
            // Unbacked claims are revoked too: a worker that does run them stops them.
            revoke.insert(id, meta.owned.minus(&kept));
            keep.insert(id, kept);
            backed.insert(id, believed);
        }
        let mut unowned = desired.minus(&claimed);

        // Work handed last round to members that are gone left with a worker. (Work handed to a
        // member still here that does not report it never reached it: the round did not finish.)
        let mut departed = Work::default();
        for (id, work) in &self.previous {
            if !members.contains_key(id) {
                departed.extend(work);
            }
        }
        let vanished = departed.intersect(&unowned);
        if !vanished.is_empty() {
            match &mut self.lost {
                Some(lost) => lost.work.extend(&vanished),
                None => self.lost = Some(Lost { work: vanished, deadline: now + self.max_delay }),
            }
        }
        let mut delay = None;
        if let Some(lost) = &mut self.lost {
            lost.work = lost.work.intersect(&unowned);
            if lost.work.is_empty() || now >= lost.deadline {
                self.lost = None;
            } else {
                unowned = unowned.minus(&lost.work);
                delay = Some(lost.deadline - now);
            }
        }

        // Balance connectors, then tasks, each on its own.
        let ids: Vec<&str> = members.keys().map(String::as_str).collect();
        let mut granted: BTreeMap<&str, Work> = ids.iter().map(|id| (*id, Work::default())).collect();
        rebalance(&ids, &mut keep, &mut revoke, &mut granted, &unowned, |w| &mut w.connectors);
        rebalance(&ids, &mut keep, &mut revoke, &mut granted, &unowned, |w| &mut w.tasks);

        let leader_url = members.get(leader).map(|m| m.url.clone()).unwrap_or_default();
        let mut owned_after: BTreeMap<&str, Work> = BTreeMap::new();
        for id in &ids {
            let mut owned = keep[id].clone();
            owned.extend(&granted[id]);
            owned_after.insert(id, owned);
        }
        // Believed work it gives up: it may run it until it rejoins.
        let giving_up: BTreeMap<&str, Work> = ids.iter().map(|id| (*id, revoke[id].intersect(&backed[id]))).collect();
        let views: BTreeMap<String, MemberView> = ids
            .iter()
            .map(|id| {
                let meta = &members[*id];
                let view = MemberView {
                    url: meta.url.clone(),
                    worker_id: meta.worker_id.clone(),
                    owned: owned_after[id].clone(),
                    giving_up: giving_up[id].clone(),
                };
                (id.to_string(), view)
            })
            .collect();
        let delay_ms = delay.map_or(0, |d| d.as_millis() as u64);
        let assignments = ids
            .iter()
            .map(|id| {
                let assignment = Assignment {
                    leader: leader.to_string(),
                    leader_url: leader_url.clone(),
                    config_offset,
                    owned: owned_after[id].clone(),
                    // An unbacked claim may come back as a grant; then it is not revoked.
                    revoked: revoke[id].minus(&granted[id]),
                    delay_ms,
                    members: views.clone(),
                };
                (id.to_string(), assignment)
            })
            .collect();

        // Remember what runs (or will, once granted); revoked work is about to be unowned on
        // purpose and is not "lost" next round.
        self.previous = owned_after.iter().map(|(id, work)| (id.to_string(), work.clone())).collect();
        self.learn(generation, &views);
        Round { assignments, delay, ignored_claims }
    }
}

/// Balances one kind of item (connectors or tasks, as `part` picks): excess moves from `keep`
/// to `revoke`, and free items go to `granted`.
fn rebalance<'a, T: Clone + Ord>(
    ids: &[&'a str],
    keep: &mut BTreeMap<&'a str, Work>,
    revoke: &mut BTreeMap<&'a str, Work>,
    granted: &mut BTreeMap<&'a str, Work>,
    unowned: &Work,
    part: impl Fn(&mut Work) -> &mut BTreeSet<T>,
) {
    let mut free_work = unowned.clone();
    let free: Vec<T> = part(&mut free_work).iter().cloned().collect();
    let held: BTreeMap<&str, Vec<T>> =
        ids.iter().map(|id| (*id, part(keep.entry(*id).or_default()).iter().cloned().collect())).collect();
    let (excess, grants) = balance(ids, held, free);
    for (id, items) in excess {
        for item in items {
            part(keep.entry(id).or_default()).remove(&item);
            part(revoke.entry(id).or_default()).insert(item);
        }
    }
    for (id, items) in grants {
        part(granted.entry(id).or_default()).extend(items);
    }
}

/// Splits items over members so that counts differ by at most one, moving as little as possible.
/// `held` is what each member keeps now; `free` what nobody holds. Returns what each member must
/// give up (it is handed out in a later round) and what it is granted now.
#[allow(clippy::type_complexity)]
fn balance<'a, T: Clone + Ord>(
    ids: &[&'a str],
    held: BTreeMap<&'a str, Vec<T>>,
    free: Vec<T>,
) -> (BTreeMap<&'a str, Vec<T>>, BTreeMap<&'a str, Vec<T>>) {
    let n = ids.len();
    let mut excess = BTreeMap::new();
    let mut grants: BTreeMap<&str, Vec<T>> = BTreeMap::new();
    if n == 0 {
        return (excess, grants);
    }
    let total: usize = held.values().map(Vec::len).sum::<usize>() + free.len();
    let (base, extra) = (total / n, total % n);
    // The members holding the most get the `extra` larger shares, so fewer items move.
    let mut by_load: Vec<&str> = ids.to_vec();
    by_load.sort_by(|a, b| held[b].len().cmp(&held[a].len()).then(a.cmp(b)));
    let target: BTreeMap<&str, usize> =
        by_load.iter().enumerate().map(|(rank, id)| (*id, base + usize::from(rank < extra))).collect();

    let mut load: BTreeMap<&str, usize> = BTreeMap::new();
    for id in ids {
        let items = &held[id];
        if items.len() > target[id] {
            excess.insert(*id, items[target[id]..].to_vec());
        }
        load.insert(*id, items.len().min(target[id]));
    }
    let mut free = free.into_iter();
    loop {
        // The least loaded member below its target takes the next free item.
        let next =
            ids.iter().filter(|id| load[*id] < target[*id]).min_by(|a, b| load[*a].cmp(&load[*b]).then(a.cmp(b)));
        let Some(id) = next else { break };
        let Some(item) = free.next() else { break };
        grants.entry(id).or_default().push(item);
        *load.entry(id).or_default() += 1;
    }
    (excess, grants)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(c: &str, t: u32) -> TaskId {
        TaskId { connector: c.into(), task: t }
    }

    fn desired(connectors: &[(&str, u32)]) -> Work {
        let mut w = Work::default();
        for (c, n) in connectors {
            w.connectors.insert(c.to_string());
            for t in 0..*n {
                w.tasks.insert(task(c, t));
            }
        }
        w
    }

    fn member(owned: Work) -> MemberMetadata {
        MemberMetadata { url: "http://w".into(), worker_id: "w".into(), config_offset: 0, owned }
    }

    /// Applies a round: every member now owns what it was assigned.
    fn apply(members: &mut BTreeMap<String, MemberMetadata>, round: &Round) {
        for (id, a) in &round.assignments {
            members.get_mut(id).unwrap().owned = a.owned.clone();
        }
    }

    fn counts(round: &Round) -> Vec<(usize, usize)> {
        round.assignments.values().map(|a| (a.owned.connectors.len(), a.owned.tasks.len())).collect()
    }

    fn assert_balanced(round: &Round) {
        let c = counts(round);
        let (cmin, cmax) = (c.iter().map(|x| x.0).min().unwrap(), c.iter().map(|x| x.0).max().unwrap());
        let (tmin, tmax) = (c.iter().map(|x| x.1).min().unwrap(), c.iter().map(|x| x.1).max().unwrap());
        assert!(cmax - cmin <= 1 && tmax - tmin <= 1, "unbalanced: {c:?}");
    }

    fn assert_disjoint(round: &Round) {
        let mut seen = Work::default();
        for a in round.assignments.values() {
            assert!(seen.intersect(&a.owned).is_empty(), "work assigned twice");
            seen.extend(&a.owned);
        }
    }

    #[test]
    fn first_round_spreads_everything_evenly() {
        let mut assignor = Assignor::new(Duration::ZERO);
        let members: BTreeMap<String, MemberMetadata> =
            ["a", "b", "c"].iter().map(|m| (m.to_string(), member(Work::default()))).collect();
        let want = desired(&[("x", 4), ("y", 2)]);
        let round = assignor.assign("a", 1, &members, &want, 7, Instant::now());
        assert_balanced(&round);
        assert_disjoint(&round);
        let all = round.assignments.values().fold(Work::default(), |mut w, a| {
            w.extend(&a.owned);
            w
        });
        assert_eq!(all, want);
        assert!(round.assignments.values().all(|a| a.config_offset == 7 && a.leader == "a" && a.revoked.is_empty()));
    }

    #[test]
    fn a_new_member_takes_work_in_two_rounds_and_nobody_else_moves() {
        let mut assignor = Assignor::new(Duration::from_secs(60));
        let want = desired(&[("x", 6)]);
        let mut members: BTreeMap<String, MemberMetadata> =
            ["a", "b", "c"].iter().map(|m| (m.to_string(), member(Work::default()))).collect();
        let first = assignor.assign("a", 1, &members, &want, 0, Instant::now());
        apply(&mut members, &first);
        let before: BTreeMap<String, Work> = members.iter().map(|(k, v)| (k.clone(), v.owned.clone())).collect();

        members.insert("d".into(), member(Work::default()));
        let revoking = assignor.assign("a", 2, &members, &want, 0, Instant::now());
        // Round one only takes away: the newcomer gets nothing that someone still runs.
        assert_disjoint(&revoking);
        let revoked: usize = revoking.assignments.values().map(|a| a.revoked.tasks.len()).sum();
        assert_eq!(revoked, 1, "6 tasks over 4 workers: one of the three with two gives one up");
        apply(&mut members, &revoking);
        let settled = assignor.assign("a", 3, &members, &want, 0, Instant::now());
        assert_balanced(&settled);
        assert_disjoint(&settled);
        assert_eq!(settled.delay, None, "revoked work is not lost work");
        for (id, had) in &before {
            let now = &settled.assignments[id].owned;
            let moved = had.minus(now).tasks.len() + now.minus(had).tasks.len();
            assert!(moved <= 1, "{id} moved more than one task");
        }
    }

    #[test]
    fn work_of_a_departed_member_waits_for_the_delay_then_moves() {
        let mut assignor = Assignor::new(Duration::from_secs(10));
        let want = desired(&[("x", 3), ("y", 3)]);
        let mut members: BTreeMap<String, MemberMetadata> =
            ["a", "b", "c"].iter().map(|m| (m.to_string(), member(Work::default()))).collect();
        let t0 = Instant::now();
        let first = assignor.assign("a", 1, &members, &want, 0, t0);
        apply(&mut members, &first);
        let gone = members.remove("c").unwrap().owned;

        // The wait starts when the leader notices the loss.
        let waiting = assignor.assign("a", 2, &members, &want, 0, t0 + Duration::from_secs(1));
        assert_eq!(waiting.delay, Some(Duration::from_secs(10)));
        apply(&mut members, &waiting);
        let still = assignor.assign("a", 3, &members, &want, 0, t0 + Duration::from_secs(5));
        for a in waiting.assignments.values().chain(still.assignments.values()) {
            assert!(a.owned.intersect(&gone).is_empty(), "held-back work was handed out early");
        }
        assert_eq!(still.assignments["a"].delay_ms, 6000);
        apply(&mut members, &still);

        let moved = assignor.assign("a", 4, &members, &want, 0, t0 + Duration::from_secs(12));
        assert_eq!(moved.delay, None);
        assert_balanced(&moved);
        let all = moved.assignments.values().fold(Work::default(), |mut w, a| {
            w.extend(&a.owned);
            w
        });
        assert_eq!(all, want);
    }

    #[test]
    fn deleted_work_is_revoked_and_double_claims_resolved() {
        let mut assignor = Assignor::new(Duration::ZERO);
        let mut both = desired(&[("x", 2)]);
        both.tasks.insert(task("gone", 0));
        let members: BTreeMap<String, MemberMetadata> =
            [("a".to_string(), member(both.clone())), ("b".to_string(), member(both))].into_iter().collect();
        let want = desired(&[("x", 2)]);
        let round = assignor.assign("a", 1, &members, &want, 0, Instant::now());
        assert_disjoint(&round);
        assert!(round.assignments["a"].revoked.tasks.contains(&task("gone", 0)));
        assert!(round.assignments["b"].revoked.tasks.contains(&task("x", 0)));
    }

    /// Two workers that ran a round; `x` and `y` are spread over them.
    fn settled(assignor: &mut Assignor, want: &Work) -> BTreeMap<String, MemberMetadata> {
        let mut members: BTreeMap<String, MemberMetadata> =
            ["a", "b"].iter().map(|m| (m.to_string(), member(Work::default()))).collect();
        let first = assignor.assign("a", 1, &members, want, 0, Instant::now());
        apply(&mut members, &first);
        members
    }

    #[test]
    fn a_newcomers_claim_the_previous_round_does_not_back_is_handed_out_as_unowned_work() {
        let mut assignor = Assignor::new(Duration::from_secs(60));
        let want = desired(&[("x", 2), ("y", 2)]);
        let mut members = settled(&mut assignor, &want);
        let a_had = members["a"].owned.clone();
        // A client joins and says it runs everything, and a connector nobody runs yet.
        let mut grab = want.clone();
        grab.connectors.insert("z".into());
        let mut all = want.clone();
        all.connectors.insert("z".into());
        members.insert("0-intruder".into(), member(grab.clone()));
        let round = assignor.assign("a", 2, &members, &all, 0, Instant::now());
        assert_eq!(round.ignored_claims.keys().collect::<Vec<_>>(), ["0-intruder"]);
        assert_eq!(round.ignored_claims["0-intruder"], grab);
        assert_disjoint(&round);
        // The workers keep what they run; the intruder keeps none of its claims and is told so.
        assert_eq!(round.assignments["a"].owned.intersect(&a_had), a_had);
        let intruder = &round.assignments["0-intruder"];
        assert!(intruder.owned.intersect(&want).is_empty(), "{:?}", intruder.owned);
        assert_eq!(intruder.revoked, grab.minus(&intruder.owned));
        assert!(intruder.members["0-intruder"].giving_up.is_empty(), "unbacked claims back nothing next round");
        // `z` went out as new work, to whichever member balance picked.
        let z_owners = round.assignments.values().filter(|a| a.owned.connectors.contains("z")).count();
        assert_eq!(z_owners, 1);
    }

    #[test]
    fn a_member_claiming_another_members_work_keeps_none_of_it() {
        let mut assignor = Assignor::new(Duration::from_secs(60));
        let want = desired(&[("x", 2), ("y", 2)]);
        let mut members = settled(&mut assignor, &want);
        let (a_had, b_had) = (members["a"].owned.clone(), members["b"].owned.clone());
        // `a` sorts first: without the check, its claim of b's work would win.
        members.get_mut("a").unwrap().owned.extend(&b_had);
        let round = assignor.assign("a", 2, &members, &want, 0, Instant::now());
        assert_eq!(round.ignored_claims["a"], b_had);
        assert_eq!(round.assignments["a"].owned, a_had);
        assert_eq!(round.assignments["b"].owned, b_had);
        assert!(round.assignments["b"].revoked.is_empty());
    }

    #[test]
    fn a_new_leader_checks_claims_against_the_round_it_learned_from_its_assignment() {
        let mut old_leader = Assignor::new(Duration::from_secs(60));
        let want = desired(&[("x", 2), ("y", 2)]);
        let mut members = settled(&mut old_leader, &want);
        let b_had = members["b"].owned.clone();
        let last = old_leader.assign("a", 2, &members, &want, 0, Instant::now());
        apply(&mut members, &last);
        members.get_mut("a").unwrap().owned.extend(&b_had);

        // `b` leads generation 3, knowing generation 2 from the assignment it received.
        let mut new_leader = Assignor::new(Duration::from_secs(60));
        new_leader.learn(2, &last.assignments["b"].members);
        let round = new_leader.assign("b", 3, &members, &want, 0, Instant::now());
        assert_eq!(round.ignored_claims["a"], b_had);
        assert_eq!(round.assignments["b"].owned, b_had);

        // A leader that missed generation 2, or saw no round at all, believes what members report.
        let mut stale = Assignor::new(Duration::from_secs(60));
        stale.learn(1, &last.assignments["b"].members);
        assert!(stale.assign("b", 3, &members, &want, 0, Instant::now()).ignored_claims.is_empty());
        let mut fresh = Assignor::new(Duration::from_secs(60));
        assert!(fresh.assign("b", 3, &members, &want, 0, Instant::now()).ignored_claims.is_empty());
    }

    #[test]
    fn work_revoked_in_a_round_that_never_reached_its_worker_is_still_believed_next_round() {
        let mut assignor = Assignor::new(Duration::from_secs(60));
        let want = desired(&[("x", 6)]);
        let mut members = settled(&mut assignor, &want);
        members.insert("c".into(), member(Work::default()));
        let revoking = assignor.assign("a", 2, &members, &want, 0, Instant::now());
        let given_up: Work = revoking.assignments.values().fold(Work::default(), |mut w, a| {
            w.extend(&a.revoked);
            w
        });
        assert!(!given_up.is_empty());
        // Nobody received generation 2's assignment: everyone still runs and reports its old work.
        let round = assignor.assign("a", 3, &members, &want, 0, Instant::now());
        assert!(round.ignored_claims.is_empty(), "{:?}", round.ignored_claims.keys());
        assert_disjoint(&round);
    }

    #[test]
    fn balance_gives_the_larger_shares_to_those_holding_most() {
        let ids = ["a", "b"];
        let held: BTreeMap<&str, Vec<u32>> = [("a", vec![1, 2, 3]), ("b", vec![])].into_iter().collect();
        let (excess, grants) = balance(&ids, held, vec![4]);
        assert_eq!(excess.get("a"), Some(&vec![3]));
        assert_eq!(grants.get("b"), Some(&vec![4]));
    }
}
