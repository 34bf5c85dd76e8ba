//! A source whose task traps (panics, which aborts the WebAssembly instance) on its first poll,
//! or after `trap.after.polls` polls; with `fail.open` = `fatal` or `retriable` its `open` fails
//! so instead. Tests use it to check that a failing plugin fails only its own task, and how
//! failed tasks are restarted.

use wharf_sdk::*;

struct Trapper;

impl Connector for Trapper {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-trapper".into(),
            version: "0.1.0".into(),
            description: "Traps in poll (for tests)".into(),
            kind: ConnectorKind::Source,
            config: vec![
                optional_key("message", ConfigType::String, "trapper was told to trap", "The panic message"),
                optional_key("fail.open", ConfigType::String, "", "fatal or retriable: open fails so"),
                optional_key("trap.after.polls", ConfigType::Int, "0", "Polls answered with nothing before the trap"),
            ],
        }
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        Ok(vec![config.clone()])
    }
}

struct TrapperTask {
    message: String,
    polls_left: u64,
}

impl SourceTask for TrapperTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let message = config.get("message").unwrap_or("trapper was told to trap").to_string();
        match config.get("fail.open") {
            Some("fatal") => return Err(ConnectorError::Fatal("the trapper was told to refuse to open".into())),
            Some("retriable") => {
                return Err(ConnectorError::Retriable("the trapper was told to fail to open, for now".into()))
            }
            _ => {}
        }
        let polls_left = config.get("trap.after.polls").and_then(|n| n.trim().parse().ok()).unwrap_or(0);
        Ok(TrapperTask { message, polls_left })
    }

    fn poll(&mut self, _max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        if self.polls_left > 0 {
            self.polls_left -= 1;
            return Ok(Vec::new());
        }
        panic!("{}", self.message);
    }
}

impl SourceConnector for Trapper {
    type Task = TrapperTask;
}

source_connector!(Trapper);
