//! A connector's own calls (describe, validate, task-configs), each on an instance of its own
//! that lives for the call.

use super::*;

/// A short-lived instance for connector calls.
pub struct ConnectorInstance {
    pub(super) store: Store<TaskState>,
    pub(super) bound: Bound,
    pub(super) grants: Option<declared::DeclaredGrants>,
    pub(super) connections: Option<declared_connections::DeclaredConnectionGrants>,
    pub(super) tls: Option<declared_tls::DeclaredConnectionTls>,
    pub(super) exactly_once: Option<exactly_once::ExactlyOnceSource>,
    pub(super) limits: WasmLimits,
}

impl ConnectorInstance {
    /// Which config keys name what; nothing for a plugin of 0.1.0.
    pub fn declared_grants(&mut self) -> Result<Vec<wharf_connect::model::KeyGrant>, PluginError> {
        let Some(grants) = &self.grants else { return Ok(Vec::new()) };
        let declared = call_infallible(&mut self.store, &self.limits, "declare", async |s| {
            grants.wharf_connector_grants().call_declare(s).await
        })?;
        self.bounded("declare", declared.iter().map(|g| g.key.len()).sum())?;
        Ok(declared.into_iter().map(wit_convert::key_grant_from_wit).collect())
    }

    /// Which config keys name servers the way database drivers do; nothing for a plugin
    /// before 0.1.4.
    pub fn declared_connections(&mut self) -> Result<Vec<wharf_connect::model::ConnectionGrant>, PluginError> {
        let Some(connections) = &self.connections else { return Ok(Vec::new()) };
        let declared = call_infallible(&mut self.store, &self.limits, "declare", async |s| {
            connections.wharf_connector_connection_grants().call_declare(s).await
        })?;
        self.bounded("declare", declared.iter().map(wit_convert::connection_grant_bytes).sum())?;
        Ok(declared.into_iter().map(wit_convert::connection_grant_from_wit).collect())
    }

    /// Puts the plugin's `connection-tls` declarations on its host-and-port `connections`;
    /// nothing for a plugin before 0.1.5.
    pub fn declared_connection_tls(
        &mut self,
        connections: &mut [wharf_connect::model::ConnectionGrant],
    ) -> Result<(), PluginError> {
        let Some(tls) = &self.tls else { return Ok(()) };
        let declared = call_infallible(&mut self.store, &self.limits, "declare", async |s| {
            tls.wharf_connector_connection_tls().call_declare(s).await
        })?;
        self.bounded("declare", declared.iter().map(wit_convert::server_tls_bytes).sum())?;
        wit_convert::attach_connection_tls(connections, declared).map_err(PluginError::Fatal)
    }

    /// Whether the connector's tasks give exactly-once delivery with `config` (Kafka Connect's
    /// `exactlyOnceSupport`): none when the plugin does not say, as no plugin before 0.1.8 does.
    pub fn exactly_once_support(&mut self, config: &Vec<(String, String)>) -> Result<Option<bool>, PluginError> {
        let Some(exactly_once) = &self.exactly_once else { return Ok(None) };
        let answer = call_infallible(&mut self.store, &self.limits, "exactly-once-support", async |s| {
            exactly_once.wharf_connector_exactly_once().call_exactly_once_support(s, config).await
        })?;
        Ok(answer.map(|capability| capability == WitCapability::Supported))
    }

    /// Whether the connector's tasks can define their own transactions with `config` (Kafka
    /// Connect's `canDefineTransactionBoundaries`); a plugin before 0.1.8 cannot.
    pub fn can_define_transaction_boundaries(&mut self, config: &Vec<(String, String)>) -> Result<bool, PluginError> {
        let Some(exactly_once) = &self.exactly_once else { return Ok(false) };
        let answer = call_infallible(&mut self.store, &self.limits, "can-define-transaction-boundaries", async |s| {
            exactly_once.wharf_connector_exactly_once().call_can_define_transaction_boundaries(s, config).await
        })?;
        Ok(answer == WitCapability::Supported)
    }

    pub fn describe(&mut self) -> Result<PluginInfo, PluginError> {
        let info = match &self.bound {
            Bound::Source(b) => call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                b.wharf_connector_connector().call_describe(s).await
            })
            .map(wit_convert::plugin_info_from_wit),
            Bound::DataSource(b) => call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                b.wharf_connector_connector().call_describe(s).await
            })
            .map(wit_convert::plugin_info_from_wit),
            Bound::Sink(b) => call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                b.wharf_connector_connector().call_describe(s).await
            })
            .map(wit_convert::plugin_info_from_wit),
            Bound::DataSink(b) => call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                b.wharf_connector_connector().call_describe(s).await
            })
            .map(wit_convert::plugin_info_from_wit),
            Bound::Transform(b) => {
                let info = call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                    b.wharf_connector_transformer().call_describe(s).await
                })?;
                Ok(wit_convert::transform_info_from_wit(info))
            }
        }?;
        let bytes = info.name.len()
            + info.version.len()
            + info.description.len()
            + info
                .config
                .iter()
                .map(|k| {
                    k.name.len()
                        + k.documentation.len()
                        + k.default_value.as_ref().map_or(0, String::len)
                        + k.group.as_ref().map_or(0, String::len)
                })
                .sum::<usize>();
        self.bounded("describe", bytes)?;
        Ok(info)
    }

    pub fn validate(
        &mut self,
        config: &Vec<(String, String)>,
    ) -> Result<Vec<wharf_connect::model::ConfigProblem>, PluginError> {
        let problems = match &self.bound {
            Bound::Source(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_connector().call_validate(s, config).await
            }),
            Bound::DataSource(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_connector().call_validate(s, config).await
            }),
            Bound::Sink(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_connector().call_validate(s, config).await
            }),
            Bound::DataSink(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_connector().call_validate(s, config).await
            }),
            Bound::Transform(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_transformer().call_validate(s, config).await
            }),
        }?;
        self.bounded("validate", problems.iter().map(|p| p.name.len() + p.message.len()).sum())?;
        Ok(problems.into_iter().map(wit_convert::config_problem_from_wit).collect())
    }

    pub fn task_configs(
        &mut self,
        config: &Vec<(String, String)>,
        max_tasks: u32,
    ) -> Result<Vec<Vec<(String, String)>>, PluginError> {
        let configs = match &self.bound {
            Bound::Source(b) => call(&mut self.store, &self.limits, "task-configs", async |s| {
                b.wharf_connector_connector().call_task_configs(s, config, max_tasks).await
            }),
            Bound::DataSource(b) => call(&mut self.store, &self.limits, "task-configs", async |s| {
                b.wharf_connector_connector().call_task_configs(s, config, max_tasks).await
            }),
            Bound::Sink(b) => call(&mut self.store, &self.limits, "task-configs", async |s| {
                b.wharf_connector_connector().call_task_configs(s, config, max_tasks).await
            }),
            Bound::DataSink(b) => call(&mut self.store, &self.limits, "task-configs", async |s| {
                b.wharf_connector_connector().call_task_configs(s, config, max_tasks).await
            }),
            Bound::Transform(_) => Err(PluginError::Fatal(
                "a transform plugin has no tasks of its own: it runs in a connector's transforms".into(),
            )),
        }?;
        if configs.len() > max_tasks as usize {
            return Err(PluginError::TooManyTasks { count: configs.len(), max: max_tasks });
        }
        self.bounded("task-configs", configs.iter().flatten().map(|(k, v)| k.len() + v.len()).sum())?;
        Ok(configs)
    }

    /// An answer of `bytes` within `wasm.max.bytes.per.call`.
    fn bounded(&self, call: &'static str, bytes: usize) -> Result<(), PluginError> {
        if bytes > self.limits.max_bytes_per_call {
            return Err(PluginError::TooLarge { call, bytes, max: self.limits.max_bytes_per_call });
        }
        Ok(())
    }
}
