//! A source that says where its transactions end (contract 0.1.8 `transaction-context`), so that
//! tests can check what the host makes of it. It numbers records from 0 (key and value are the
//! number as text), `count` in all, resuming after the last one stored, and, when the host lets it
//! define its transactions, ends one after every `orders.per.transaction` records: transaction k
//! (from 1) is aborted when `abort.every.transaction` divides k, committed otherwise. With 10 a
//! transaction and every third aborted, records 20-29, 50-59, ... are never visible to
//! `read_committed` consumers.
//!
//! `answer.exactly.once` (`supported`, `unsupported` or `none`) and `answer.boundaries`
//! (`supported` or `unsupported`) are what the connector answers the host's two questions.
//! `break` makes its task break the contract at its first poll: `both` asks to commit and abort
//! after the same record, `beyond` to commit after a record past the batch. `end.batches`
//! (`commit` or `abort`) ends the transaction after every batch with records as well, through the
//! batch's own request.

use wharf_sdk::*;

struct Transactor;

fn partition() -> OffsetMap {
    vec![("transactor".into(), Scalar::Text("numbers".into()))]
}

impl Connector for Transactor {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-transactor".into(),
            version: "0.1.0".into(),
            description: "Numbers records and says where its transactions end (tests only)".into(),
            kind: ConnectorKind::Source,
            config: vec![
                required_key("topic", ConfigType::String, "Where to write"),
                optional_key("count", ConfigType::Long, "300", "How many records in all"),
                optional_key("orders.per.transaction", ConfigType::Int, "10", "Records a transaction"),
                optional_key(
                    "abort.every.transaction",
                    ConfigType::Int,
                    "0",
                    "Every n-th transaction is aborted; 0 never",
                ),
                optional_key("answer.exactly.once", ConfigType::String, "supported", "supported, unsupported or none"),
                optional_key("answer.boundaries", ConfigType::String, "supported", "supported or unsupported"),
                optional_key("break", ConfigType::String, "", "both or beyond: break the contract at the first poll"),
                optional_key("end.batches", ConfigType::String, "", "commit or abort: end every batch's transaction"),
            ],
        }
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        Ok(vec![config.clone()])
    }
}

impl SourceConnector for Transactor {
    type Task = TransactorTask;

    fn exactly_once_support(config: &Config) -> Option<Capability> {
        match config.get("answer.exactly.once").unwrap_or("supported") {
            "none" => None,
            "unsupported" => Some(Capability::Unsupported),
            _ => Some(Capability::Supported),
        }
    }

    fn can_define_transaction_boundaries(config: &Config) -> Capability {
        match config.get("answer.boundaries") {
            Some("unsupported") => Capability::Unsupported,
            _ => Capability::Supported,
        }
    }
}

struct TransactorTask {
    topic: String,
    next: i64,
    count: i64,
    per_transaction: i64,
    abort_every: i64,
    breaks: String,
    end_batches: String,
}

impl SourceTask for TransactorTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let per_transaction: i64 = config.parse_or("orders.per.transaction", 10)?;
        if per_transaction < 1 {
            return Err(ConnectorError::Fatal("orders.per.transaction must be at least 1".into()));
        }
        let next = committed_offset(&partition()).and_then(|o| offset_integer(&o, "next")).map_or(0, |last| last + 1);
        Ok(TransactorTask {
            topic: config.require("topic")?.to_string(),
            next,
            count: config.parse_or("count", 300)?,
            per_transaction,
            abort_every: config.parse_or("abort.every.transaction", 0)?,
            breaks: config.get("break").unwrap_or("").to_string(),
            end_batches: config.get("end.batches").unwrap_or("").to_string(),
        })
    }

    fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        let defines = transactions::defines_boundaries();
        let mut records = Vec::new();
        while records.len() < max_records.min(25) as usize && self.next < self.count {
            let n = self.next;
            let mut record = source_record(
                partition(),
                vec![("next".into(), Scalar::Integer(n))],
                &self.topic,
                n.to_string().into_bytes(),
            );
            record.key = Some(n.to_string().into_bytes().into());
            records.push(record);
            if defines && (n + 1) % self.per_transaction == 0 {
                let k = (n + 1) / self.per_transaction;
                let index = (records.len() - 1) as u32;
                if self.abort_every > 0 && k % self.abort_every == 0 {
                    transactions::abort_after(index);
                } else {
                    transactions::commit_after(index);
                }
            }
            self.next += 1;
        }
        if defines && !records.is_empty() {
            match self.end_batches.as_str() {
                "commit" => transactions::commit(),
                "abort" => transactions::abort(),
                _ => {}
            }
        }
        match std::mem::take(&mut self.breaks).as_str() {
            "both" if !records.is_empty() => {
                transactions::commit_after(0);
                transactions::abort_after(0);
            }
            "beyond" => transactions::commit_after(records.len() as u32 + 3),
            _ => {}
        }
        Ok(records)
    }
}

source_connector!(Transactor);
