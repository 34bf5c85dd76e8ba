//! What a plugin writes to the worker's log, through the `host` interface's `log` or its stderr,
//! within bounds: a line is at most `wasm.log.line.max.bytes` long, control characters are shown
//! escaped (a plugin cannot write a newline and forge a line of the worker's own), and a task
//! logs at most `wasm.log.lines.per.second` lines; the rest are counted, dropped, and reported in
//! one line.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sync::Unpoisoned;

/// Where a plugin's line came from, and how severe it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// The bounds of one instance's log, shared by its `log` calls and its stderr.
#[derive(Clone)]
pub struct PluginLog {
    label: Arc<str>,
    /// The connector's resolved secrets, put back as their references in every line.
    secrets: Arc<crate::config::providers::Secrets>,
    max_line_bytes: usize,
    lines_per_second: u32,
    budget: Arc<Mutex<Budget>>,
    /// Told of each refusal (the task's metrics).
    on_refusal: Option<Arc<dyn Fn() + Send + Sync>>,
}

struct Budget {
    window_started: Instant,
    used: u32,
    dropped: u64,
}

const WINDOW: Duration = Duration::from_secs(1);

impl PluginLog {
    pub fn new(label: &str, max_line_bytes: usize, lines_per_second: u32) -> Self {
        PluginLog {
            label: label.into(),
            secrets: Arc::default(),
            max_line_bytes,
            lines_per_second,
            budget: Arc::new(Mutex::new(Budget { window_started: Instant::now(), used: 0, dropped: 0 })),
            on_refusal: None,
        }
    }

    /// The log, telling `on_refusal` of each refusal it writes.
    pub fn telling_refusals(mut self, on_refusal: Option<Arc<dyn Fn() + Send + Sync>>) -> Self {
        self.on_refusal = on_refusal;
        self
    }

    /// The log, with `secrets` shown as their references in every line.
    pub fn hiding(mut self, secrets: &crate::config::providers::Secrets) -> Self {
        self.secrets = Arc::new(secrets.clone());
        self
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Longest line logged whole.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// Logs one line of the plugin's, if this second's budget allows; `prefix` says where it
    /// came from (`stderr: `) and is not counted, `cut` is how many bytes of the line were cut
    /// off already.
    pub fn line(&self, level: LogLevel, prefix: &str, text: &[u8], cut: usize) {
        let dropped_before = {
            let mut budget = self.budget.locked();
            let now = Instant::now();
            let mut dropped_before = 0;
            if now.duration_since(budget.window_started) >= WINDOW {
                budget.window_started = now;
                budget.used = 0;
                dropped_before = std::mem::take(&mut budget.dropped);
            }
            if budget.used >= self.lines_per_second {
                budget.dropped += 1;
                None
            } else {
                budget.used += 1;
                Some(dropped_before)
            }
        };
        let Some(dropped_before) = dropped_before else { return };
        if dropped_before > 0 {
            self.report_dropped(dropped_before);
        }
        let mut shown = printable(text, self.max_line_bytes);
        // Most connectors hold no secret: their lines are not copied again.
        if !self.secrets.is_empty() {
            shown = self.secrets.scrub(&shown);
        }
        if cut > 0 {
            shown.push_str(&format!("… ({cut} more bytes cut at wasm.log.line.max.bytes={})", self.max_line_bytes));
        }
        let task = &*self.label;
        match level {
            LogLevel::Trace => tracing::trace!(target: "plugin", task, "{prefix}{shown}"),
            LogLevel::Debug => tracing::debug!(target: "plugin", task, "{prefix}{shown}"),
            LogLevel::Info => tracing::info!(target: "plugin", task, "{prefix}{shown}"),
            LogLevel::Warn => tracing::warn!(target: "plugin", task, "{prefix}{shown}"),
            LogLevel::Error => tracing::error!(target: "plugin", task, "{prefix}{shown}"),
        }
    }

    /// The host's warning about what this instance tried and was refused (a lookup, a connect,
    /// a request), counted. The plugin chooses what it names and how often, so these lines
    /// share the plugin's budget and bounds.
    pub fn refused(&self, message: &str) {
        if let Some(tell) = &self.on_refusal {
            tell();
        }
        self.line(LogLevel::Warn, "", message.as_bytes(), 0);
    }

    fn report_dropped(&self, dropped: u64) {
        tracing::warn!(
            task = &*self.label,
            "dropped {dropped} log line(s) of the plugin's: it logged more than wasm.log.lines.per.second={} in a second",
            self.lines_per_second
        );
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        if self.dropped > 0 {
            tracing::warn!(
                "dropped {} log line(s) of a plugin instance that has ended: it logged more than \
                 wasm.log.lines.per.second in its last second",
                self.dropped
            );
        }
    }
}

/// `text` as one log line: invalid UTF-8 replaced, control characters other than tab escaped
/// (`\n`, `\r`, `\u{1b}`), and cut at `max_bytes` with a note of how much was cut.
pub fn printable(text: &[u8], max_bytes: usize) -> String {
    printable_within(text, max_bytes, "wasm.log.line.max.bytes")
}

/// The most bytes of a plugin's error text (a `connector-error`) the host keeps: it becomes a
/// log line, a task's status trace and REST answers.
pub const MAX_ERROR_TEXT_BYTES: usize = 8 * 1024;

/// A plugin's error text as the host keeps it: escaped as a log line is, and cut at
/// `MAX_ERROR_TEXT_BYTES`.
pub fn error_text(text: &str) -> String {
    printable_within(text.as_bytes(), MAX_ERROR_TEXT_BYTES, "the host's bound on error texts")
}

/// `printable`, naming `bound` as what cut the text.
fn printable_within(text: &[u8], max_bytes: usize, bound: &str) -> String {
    let text = String::from_utf8_lossy(text);
    let mut shown = String::with_capacity(text.len().min(max_bytes) + 32);
    let mut cut_at = None;
    for (at, c) in text.char_indices() {
        if shown.len() >= max_bytes {
            cut_at = Some(at);
            break;
        }
        wharf_connect::model::push_escaped(&mut shown, c);
    }
    if let Some(at) = cut_at {
        shown.push_str(&format!("… ({} more bytes cut at {bound}={max_bytes})", text.len() - at));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugins_error_text_is_escaped_and_bounded() {
        let long = format!("bad\nERROR forged{}", "x".repeat(4 * MAX_ERROR_TEXT_BYTES));
        let kept = error_text(&long);
        assert!(kept.starts_with("bad\\nERROR forged") && !kept.contains('\n'), "{}", &kept[..40]);
        assert!(kept.len() < MAX_ERROR_TEXT_BYTES + 100 && kept.contains("more bytes cut"));
    }

    #[test]
    fn a_line_cannot_forge_another_line_or_hide_control_characters() {
        assert_eq!(printable(b"ok\nERROR forged line\r\x1b[2J\tend", 1000), "ok\\nERROR forged line\\r\\u{1b}[2J\tend");
        assert_eq!(printable("a\u{202e}b".as_bytes(), 1000), "a\\u{202e}b");
        assert_eq!(printable(b"\xff", 1000), "\u{fffd}");
    }

    #[test]
    fn a_long_line_is_cut_saying_so() {
        let shown = printable("é".repeat(100).as_bytes(), 11);
        assert!(shown.starts_with("éééééé…"), "{shown}");
        assert!(shown.ends_with("(188 more bytes cut at wasm.log.line.max.bytes=11)"), "{shown}");
        assert_eq!(printable(b"short", 11), "short");
    }

    #[test]
    fn lines_past_the_rate_are_counted_and_dropped() {
        let log = PluginLog::new("t", 100, 3);
        for _ in 0..10 {
            log.line(LogLevel::Info, "", b"x", 0);
        }
        let budget = log.budget.locked();
        assert_eq!((budget.used, budget.dropped), (3, 7));
    }
}
