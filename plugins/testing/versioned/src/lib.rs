//! A source whose version is chosen when it is built (`WHARF_TEST_PLUGIN_VERSION`, default
//! 1.0.0). Its task sends one record, its own version, so tests can see which version runs.

use wharf_sdk::*;

const VERSION: &str = match option_env!("WHARF_TEST_PLUGIN_VERSION") {
    Some(version) => version,
    None => "1.0.0",
};

struct Versioned;

impl Connector for Versioned {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-versioned".into(),
            version: VERSION.into(),
            description: "Sends its own version once (for tests)".into(),
            kind: ConnectorKind::Source,
            config: vec![required_key("topic", ConfigType::String, "Where the record goes")],
        }
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        Ok(vec![config.clone()])
    }
}

struct VersionedTask {
    topic: String,
    sent: bool,
}

impl SourceTask for VersionedTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        Ok(VersionedTask { topic: config.require("topic")?.to_string(), sent: false })
    }

    fn poll(&mut self, _max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        if self.sent {
            return Ok(Vec::new());
        }
        self.sent = true;
        Ok(vec![source_record(Vec::new(), Vec::new(), &self.topic, VERSION.as_bytes().to_vec())])
    }
}

impl SourceConnector for Versioned {
    type Task = VersionedTask;
}

source_connector!(Versioned);
