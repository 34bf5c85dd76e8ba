//! What the herder's thread hands to threads of their own, so that a round never waits for a
//! plugin or a round trip: generating a connector's task configs (the plugin's calls), delivering
//! them (a config-topic transaction, or a request to the leader), and distributing a new session
//! key. Each answers with a request (`Generated`, `Forwarded`) or a wake. At most
//! `MAX_GENERATING` generations and deliveries run at once.

use std::sync::atomic::Ordering;

use super::canonical;
use super::place;
use super::request::{Delivery, Forward, Request};
use super::round::{HerderLoop, MAX_GENERATING, NO_LEADER};
use crate::config::ConnectorConfig;
use crate::storage::config::ConfigStoreError;
use crate::storage::ConfigSnapshot;
use crate::worker::StartError;
use wharf_connect::model::{Pairs, TargetState};

impl HerderLoop {
    /// Whether a connector's task configs are on their way to the leader, or `MAX_GENERATING`
    /// threads generate or send task configs already.
    fn busy_with(&self, name: &str) -> bool {
        self.forwarding.contains(name) || self.generating.len() + self.forwarding.len() >= MAX_GENERATING
    }

    /// Starts generating a connector's task configs off the herder's thread, unless that is
    /// under way already or `MAX_GENERATING` generations are; the answer comes back as a
    /// `Generated` request.
    pub(super) fn generate(&mut self, name: &str, config: ConnectorConfig, from: &Pairs) {
        if self.busy_with(name) || self.generating.contains(name) {
            return;
        }
        let (herder, label, from) = (self.herder.clone(), name.to_string(), from.clone());
        let spawned = std::thread::Builder::new().name(format!("generate-{name}")).spawn(move || {
            // Its lines say `[<connector>|worker]`, as Kafka Connect's do for a connector's work.
            let _context = tracing::error_span!("connector", connector = label.as_str()).entered();
            let generated =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| herder.worker.task_configs(&config)));
            let configs = generated
                .unwrap_or_else(|panic| {
                    Err(StartError::Bug {
                        name: label.clone(),
                        message: format!(
                            "generating task configs failed on a bug ({})",
                            crate::sync::panic_message(&*panic)
                        ),
                    })
                })
                .map(|configs| configs.into_iter().map(canonical).collect());
            let _ = herder.ask(Request::Generated { name: label, from, configs });
        });
        match spawned {
            Ok(_) => {
                self.generating.insert(name.to_string());
                self.herder.generations.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tracing::error!(
                "connector {name}: cannot start a thread to generate its task configs ({e}); trying again shortly"
            ),
        }
    }

    /// Takes task configs generated for a connector: written (or sent to the leader) if the
    /// connector still has the config they came from and still runs here.
    pub(super) fn take_generated(
        &mut self,
        name: &str,
        from: Pairs,
        configs: Result<Vec<Pairs>, StartError>,
        forwards: &mut Vec<Forward>,
    ) {
        let snapshot = self.herder.store.snapshot();
        let Some(entry) = snapshot.connectors.get(name) else { return };
        let place = self.herder.place();
        let owned_here = place.owns_connector(name);
        if entry.config != from || !owned_here || entry.target == TargetState::Stopped {
            // Changed, moved or stopped meanwhile: the next round sees to it.
            return;
        }
        let taken = configs.map(|fresh| {
            // The same task configs under a changed connector config are written all the same:
            // their commit is what restarts the tasks with the new config, on every worker.
            if entry.tasks.as_ref() == Some(&fresh) && entry.tasks_current {
                self.generated_from.insert(name.to_string(), from.clone());
                return;
            }
            match place.task_configs_go() {
                place::Destination::NoLeader => {
                    tracing::info!("connector {name}: task configs wait for a leader ({NO_LEADER})")
                }
                to => forwards.push(Forward { name: name.to_string(), from: Some(from.clone()), tasks: fresh, to }),
            }
        });
        match taken {
            Ok(()) => {
                self.failed.remove(name);
            }
            Err(e) => {
                self.fail_connector(name, entry, &e);
                self.failed.insert(name.to_string(), (from, std::time::Instant::now()));
            }
        }
    }

    /// The leader makes a session key when there is none, or the last one is older than
    /// `inter.worker.key.ttl.ms`, and distributes it through the config topic.
    pub(super) fn renew_session_key(&self, snapshot: &ConfigSnapshot) {
        let Some(d) = &self.herder.worker.config().distributed else { return };
        let writing = &self.writing_session_key;
        if writing.load(Ordering::Acquire) {
            return;
        }
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let ttl_ms = i64::try_from(d.key_ttl.as_millis()).unwrap_or(i64::MAX);
        let current = snapshot.session_key.as_ref().filter(|k| k.algorithm == d.key_algorithm);
        if current.is_some_and(|k| now_ms.saturating_sub(k.created_ms) < ttl_ms) {
            return;
        }
        let key = match crate::peer::new_session_key(&d.key_algorithm, now_ms) {
            Ok(key) => key,
            Err(e) => {
                tracing::error!("cannot make a session key for the workers' requests: {e}");
                return;
            }
        };
        // Written on a thread of its own: a config-topic write is a Kafka round trip, which never
        // holds up the herder's thread; the next round after it sees the key in the snapshot.
        writing.store(true, Ordering::Release);
        let (herder, written) = (self.herder.clone(), writing.clone());
        let spawned = std::thread::Builder::new().name("session-key".into()).spawn(move || {
            match herder.store.put_session_key(&key) {
                Ok(()) => tracing::info!(
                    "distributed a new {} session key; workers sign their requests to each other with it",
                    key.algorithm
                ),
                Err(e) => tracing::warn!("cannot distribute a new session key: {e}; trying again shortly"),
            }
            written.store(false, Ordering::Release);
            herder.wake();
        });
        if let Err(e) = spawned {
            writing.store(false, Ordering::Release);
            tracing::error!("cannot start a thread to distribute a new session key ({e}); trying again shortly");
        }
    }

    /// Delivers task configs this worker generated, on a thread of its own: into the config
    /// store (a transactional write read back from the config topic, which Kafka may be slow to
    /// answer) or to the leader, which writes them (it may be slow to answer, or gone). What
    /// became of them comes back as a `Forwarded` request. Left to a later round when the
    /// connector's configs are on their way already or `MAX_GENERATING` threads are busy.
    pub(super) fn deliver(&mut self, forward: Forward) {
        if self.busy_with(&forward.name) {
            return;
        }
        let Forward { name, from, tasks, to } = forward;
        let herder = self.herder.clone();
        let label = name.clone();
        // The leader's writer may have been fenced by a newer leader's: then the configs wait.
        let as_leader = matches!(to, place::Destination::StoreAsLeader);
        let deliver: Box<dyn FnOnce() -> Delivery + Send> = match to {
            place::Destination::NoLeader => return,
            place::Destination::Store | place::Destination::StoreAsLeader => {
                Box::new(move || match herder.write_task_configs(&name, &tasks) {
                    Ok(()) => Delivery::Accepted,
                    Err(e @ ConfigStoreError::NotLeader(_)) if as_leader => {
                        tracing::info!("connector {name}: task configs wait for a leader ({})", herder.store_failed(e));
                        Delivery::Later
                    }
                    Err(e) => Delivery::Failed(StartError::Store { name: name.clone(), message: e.to_string() }),
                })
            }
            place::Destination::Leader(leader_url) => {
                let segment = crate::peer::path_segment(&name);
                let path = format!("/connectors/{segment}/tasks");
                let url = format!("{leader_url}{path}");
                let body = match crate::peer::task_configs_body(&tasks) {
                    Ok(body) => body,
                    Err(e) => {
                        tracing::error!("connector {name}: cannot write its task configs as JSON ({e})");
                        return;
                    }
                };
                let config = self.herder.worker.config();
                if let Some(d) = &config.distributed {
                    let rules = crate::peer::ForwardRules::new(
                        config.rest_scheme(),
                        &config.advertised,
                        &d.forward_allowed_urls,
                    );
                    if let Err(e) = rules.check(&leader_url) {
                        tracing::error!("connector {name}: its task configs are not sent to the leader: {e}");
                        return;
                    }
                }
                // Signed with the cluster's session key over the method, path, time and body,
                // which the leader checks.
                let headers = match (self.herder.store.snapshot().session_key, &config.distributed) {
                    (Some(key), Some(d)) => {
                        crate::peer::sign_request(&key, &d.signature_algorithm, "POST", &path, &body)
                            .unwrap_or_default()
                    }
                    _ => Vec::new(),
                };
                Box::new(move || match crate::peer::send("POST", &url, Some(body), herder.worker.id(), &headers) {
                    Ok((status, _)) if (200..300).contains(&status) => Delivery::Accepted,
                    Ok((status, body)) => {
                        tracing::info!(
                            "connector {name}: the leader at {leader_url} answered {status} to its task configs \
                             ({}); trying again shortly",
                            String::from_utf8_lossy(&body)
                        );
                        Delivery::Later
                    }
                    Err(e) => {
                        tracing::info!("connector {name}: task configs wait for the leader ({e})");
                        Delivery::Later
                    }
                })
            }
        };
        let (herder, name) = (self.herder.clone(), label.clone());
        let spawned = std::thread::Builder::new().name(format!("deliver-{label}")).spawn(move || {
            let delivery = deliver();
            if let Err(e) = herder.ask(Request::Forwarded { name: name.clone(), from, delivery }) {
                tracing::warn!("connector {name}: the herder did not take what became of its task configs ({e})");
            }
        });
        match spawned {
            Ok(_) => {
                self.forwarding.insert(label);
            }
            Err(e) => tracing::error!(
                "connector {label}: cannot start a thread to deliver its task configs ({e}); trying again shortly"
            ),
        }
    }
}
