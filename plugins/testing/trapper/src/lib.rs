//! A source whose task traps (panics, which aborts the WebAssembly instance) on its first poll.
//! Tests use it to check that a failing plugin fails only its own task.

use wharf_sdk::*;

struct Trapper;

impl Connector for Trapper {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-trapper".into(),
            version: "0.1.0".into(),
            description: "Traps in poll (for tests)".into(),
            kind: ConnectorKind::Source,
            config: vec![optional_key("message", ConfigType::String, "trapper was told to trap", "The panic message")],
        }
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        Ok(vec![config.clone()])
    }
}

struct TrapperTask {
    message: String,
}

impl SourceTask for TrapperTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let message = config.get("message").unwrap_or("trapper was told to trap").to_string();
        Ok(TrapperTask { message })
    }

    fn poll(&mut self, _max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        panic!("{}", self.message);
    }
}

impl SourceConnector for Trapper {
    type Task = TrapperTask;
}

source_connector!(Trapper);
