//! Prometheus's text exposition format (version 0.0.4), and OpenMetrics 1.0 for a scraper that
//! asks for it: each family's `# HELP` and `# TYPE` lines, then its samples, label values escaped
//! as the format asks. The two differ in what the scrape here writes only where a family is
//! named: OpenMetrics names a counter's family without its samples' `_total`, calls an untyped
//! family `unknown`, and ends the scrape with `# EOF`.

use std::fmt::Write;

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The content type of OpenMetrics.
pub const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Which format a scrape is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    OpenMetrics,
}

impl Format {
    /// OpenMetrics when the request's `Accept` names it (Prometheus asks for it first), the text
    /// format otherwise.
    pub fn asked(accept: Option<&str>) -> Format {
        match accept {
            Some(accept) if accept.to_ascii_lowercase().contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => CONTENT_TYPE,
            Format::OpenMetrics => OPENMETRICS_CONTENT_TYPE,
        }
    }
}

/// A family's type, as `# TYPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
    Histogram,
    Untyped,
}

impl Kind {
    fn name(self, format: Format) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
            Kind::Untyped if format == Format::OpenMetrics => "unknown",
            Kind::Untyped => "untyped",
        }
    }
}

/// The text of one scrape, family by family.
#[derive(Default)]
pub struct Exposition {
    text: String,
    format: Format,
}

impl Exposition {
    pub fn new(format: Format) -> Self {
        Exposition { text: String::new(), format }
    }

    /// Starts a family: its help and type. Its samples follow, each under the same name (a
    /// counter's ends in `_total`).
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let name = match (self.format, kind) {
            (Format::OpenMetrics, Kind::Counter) => name.strip_suffix("_total").unwrap_or(name),
            _ => name,
        };
        self.text.push_str("# HELP ");
        self.text.push_str(name);
        self.text.push(' ');
        for c in help.chars() {
            match c {
                '\\' => self.text.push_str("\\\\"),
                '\n' => self.text.push_str("\\n"),
                // OpenMetrics escapes quotes in help too.
                '"' if self.format == Format::OpenMetrics => self.text.push_str("\\\""),
                c => self.text.push(c),
            }
        }
        let _ = writeln!(self.text, "\n# TYPE {name} {}", kind.name(self.format));
    }

    /// One sample of the family started last.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                self.text.push_str(label);
                self.text.push_str("=\"");
                for c in value.chars() {
                    match c {
                        '\\' => self.text.push_str("\\\\"),
                        '"' => self.text.push_str("\\\""),
                        '\n' => self.text.push_str("\\n"),
                        c => self.text.push(c),
                    }
                }
                self.text.push('"');
            }
            self.text.push('}');
        }
        // Integral values as integers, as Prometheus's own clients write them; the text format's
        // words for what is not a number.
        if value.is_nan() {
            self.text.push_str(" NaN\n");
        } else if value.is_infinite() {
            self.text.push_str(if value > 0.0 { " +Inf\n" } else { " -Inf\n" });
        } else if value.fract() == 0.0 && value.abs() < 1e15 {
            let _ = writeln!(self.text, " {}", value as i64);
        } else {
            let _ = writeln!(self.text, " {value}");
        }
    }

    pub fn into_text(mut self) -> String {
        if self.format == Format::OpenMetrics {
            self.text.push_str("# EOF\n");
        }
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
        let mut out = Exposition::new(Format::OpenMetrics);
        out.family("wharf_task_plugin_traps_total", Kind::Counter, "Traps");
        out.sample("wharf_task_plugin_traps_total", &[("task", "0")], 2.0);
        out.family("kafka_connect_version", Kind::Untyped, "Version");
        out.sample("kafka_connect_version", &[("version", "4.1")], 1.0);
        assert_eq!(
            out.into_text(),
            "# HELP wharf_task_plugin_traps Traps\n# TYPE wharf_task_plugin_traps counter\n\
             wharf_task_plugin_traps_total{task=\"0\"} 2\n\
             # HELP kafka_connect_version Version\n# TYPE kafka_connect_version unknown\n\
             kafka_connect_version{version=\"4.1\"} 1\n# EOF\n"
        );
        let prometheus = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::asked(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::asked(Some("text/plain")), Format::Text);
        assert_eq!(Format::asked(None), Format::Text);
    }

    #[test]
    fn families_and_samples_follow_the_text_format() {
        let mut out = Exposition::default();
        out.family("kafka_connect_connector_status", Kind::Gauge, "The connector's status\\state, one line");
        out.sample(
            "kafka_connect_connector_status",
            &[("connector", "a \"quoted\"\\name\n"), ("status", "running")],
            1.0,
        );
        out.family("kafka_connect_start_time_seconds", Kind::Gauge, "Start time");
        out.sample("kafka_connect_start_time_seconds", &[], 1764950400.5);
        out.sample("a", &[], f64::NAN);
        out.sample("b", &[], f64::INFINITY);
        out.sample("c", &[], f64::NEG_INFINITY);
        assert_eq!(
            out.into_text(),
            "# HELP kafka_connect_connector_status The connector's status\\\\state, one line\n\
             # TYPE kafka_connect_connector_status gauge\n\
             kafka_connect_connector_status{connector=\"a \\\"quoted\\\"\\\\name\\n\",status=\"running\"} 1\n\
             # HELP kafka_connect_start_time_seconds Start time\n\
             # TYPE kafka_connect_start_time_seconds gauge\n\
             kafka_connect_start_time_seconds 1764950400.5\n\
             a NaN\nb +Inf\nc -Inf\n"
        );
    }
}
