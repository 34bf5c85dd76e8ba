//! How a log line reads: Kafka Connect's context (`[<connector>|task-<n>]`, `[<connector>|worker]`)
//! after the level, in text or in JSON (`wharf.log.format`).
//!
//! The context comes from the span a task's thread (`task`) or a connector's work (`connector`)
//! runs in, which `ContextLayer` keeps as a `LogContext`; a line outside such a span that names
//! its task in a `task` field (`"orders-3"`) gets the same context from it.

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// `wharf.log.format`: lines of text, or one JSON object a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

static JSON: AtomicBool = AtomicBool::new(false);

/// Writes every line from now on in `format` (the worker's config is read after the log starts).
pub fn set_format(format: LogFormat) {
    JSON.store(format == LogFormat::Json, Ordering::Relaxed);
}

/// Whose a line is: a connector's task, or the worker's work for a connector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogContext {
    pub connector: String,
    pub task: Option<u32>,
}

impl LogContext {
    /// From a task's label, `<connector>-<n>`.
    fn of_task_label(label: &str) -> Option<Self> {
        let (connector, task) = label.rsplit_once('-')?;
        let task = task.parse().ok()?;
        (!connector.is_empty()).then(|| LogContext { connector: connector.to_string(), task: Some(task) })
    }
}

impl fmt::Display for LogContext {
    /// As Kafka Connect's `LoggingContext` writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.task {
            Some(task) => write!(f, "[{}|task-{task}]", self.connector),
            None => write!(f, "[{}|worker]", self.connector),
        }
    }
}

/// Keeps the `connector` and `task` fields of a span as its `LogContext`.
pub(super) struct ContextLayer;

#[derive(Default)]
struct SpanFields {
    connector: Option<String>,
    task: Option<u32>,
}

impl Visit for SpanFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "connector" {
            self.connector = Some(value.to_string());
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "task" {
            self.task = u32::try_from(value).ok();
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == "task" {
            self.task = u32::try_from(value).ok();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "connector" {
            self.connector = Some(format!("{value:?}").trim_matches('"').to_string());
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for ContextLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = SpanFields::default();
        attrs.record(&mut fields);
        let (Some(connector), Some(span)) = (fields.connector, ctx.span(id)) else { return };
        span.extensions_mut().insert(LogContext { connector, task: fields.task });
    }
}

/// An event's message and other fields, as text.
#[derive(Default)]
struct EventFields {
    message: String,
    /// `task`, when it is a task's label.
    task_label: Option<String>,
    others: Vec<(&'static str, String, bool)>,
}

impl Visit for EventFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message.push_str(value),
            "task" if LogContext::of_task_label(value).is_some() => self.task_label = Some(value.to_string()),
            // A line of the `log` crate (librdkafka's) carries where it came from as fields; its
            // target is taken from them.
            name if name.starts_with("log.") => {}
            name => self.others.push((name, value.to_string(), true)),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => {
                let _ = write!(self.message, "{value:?}");
            }
            name if name.starts_with("log.") => {}
            name => self.others.push((name, format!("{value:?}"), false)),
        }
    }
}

/// The process's line format: tracing's usual text with Connect's context after the level, or
/// JSON.
pub(super) struct LineFormat {
    pub(super) ansi: bool,
}

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut fields = EventFields::default();
        event.record(&mut fields);
        let from_span = ctx.event_scope().and_then(|scope| {
            scope.from_root().filter_map(|span| span.extensions().get::<LogContext>().cloned()).last()
        });
        let labelled = fields.task_label.as_deref().and_then(LogContext::of_task_label);
        // A task's label says whose the line is when no span does; one that names another task
        // than the span's stays a field of the line.
        let (context, other_task) = match (from_span, labelled) {
            (Some(span), Some(label)) if span != label => (Some(span), fields.task_label.take()),
            (Some(span), _) => (Some(span), None),
            (None, label) => (label, None),
        };
        let mut time = String::new();
        SystemTime.format_time(&mut Writer::new(&mut time))?;
        let normalized = event.normalized_metadata();
        let metadata = normalized.as_ref().unwrap_or_else(|| event.metadata());
        if JSON.load(Ordering::Relaxed) {
            let mut line = serde_json::Map::new();
            line.insert("timestamp".into(), time.into());
            line.insert("level".into(), metadata.level().as_str().into());
            line.insert("target".into(), metadata.target().into());
            line.insert("message".into(), fields.message.into());
            if let Some(context) = &context {
                line.insert("connector".into(), context.connector.clone().into());
                if let Some(task) = context.task {
                    line.insert("task".into(), task.into());
                }
            }
            if let Some(label) = other_task {
                line.insert("about_task".into(), label.into());
            }
            // The line's own fields, under their names; one that would hide a field above keeps
            // its value under `field.<name>`.
            for (name, value, _) in fields.others {
                let key = if line.contains_key(name) { format!("field.{name}") } else { name.to_string() };
                line.insert(key, value.into());
            }
            return writeln!(writer, "{}", serde_json::Value::Object(line));
        }
        let level = metadata.level();
        write!(writer, "{time} ")?;
        if self.ansi {
            let colour = match *level {
                tracing::Level::ERROR => "31",
                tracing::Level::WARN => "33",
                tracing::Level::INFO => "32",
                tracing::Level::DEBUG => "34",
                tracing::Level::TRACE => "35",
            };
            write!(writer, "\x1b[{colour}m{level:>5}\x1b[0m ")?;
        } else {
            write!(writer, "{level:>5} ")?;
        }
        if let Some(context) = &context {
            write!(writer, "{context} ")?;
        }
        write!(writer, "{}: {}", metadata.target(), fields.message)?;
        if let Some(label) = &other_task {
            write!(writer, " task={label:?}")?;
        }
        for (name, value, quoted) in &fields.others {
            match quoted {
                true => write!(writer, " {name}={value:?}")?,
                false => write!(writer, " {name}={value}")?,
            }
        }
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_label_is_read_as_connect_writes_its_context() {
        let context = LogContext::of_task_label("orders-to-pg-12").unwrap();
        assert_eq!(context.to_string(), "[orders-to-pg|task-12]");
        assert_eq!(LogContext { connector: "x".into(), task: None }.to_string(), "[x|worker]");
        for not_a_task in ["orders", "orders-", "-3", "orders-x"] {
            assert_eq!(LogContext::of_task_label(not_a_task), None, "{not_a_task}");
        }
    }
}
