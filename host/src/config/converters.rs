//! Which converter each part of a record goes through: Kafka Connect's `key.converter`,
//! `value.converter` and `header.converter` with their prefixed settings, at worker level and
//! overridden per connector. A connector that names a converter class configures it from its
//! own prefixed settings only; one that does not takes the worker's converter and settings, as
//! Connect does.

use wharf_connect::convert::{self, Converter, ConverterConfigError, Role, Settings};

/// A converter class and its settings, checked: building it cannot fail.
#[derive(Debug, Clone, PartialEq)]
pub struct ConverterChoice {
    pub role: Role,
    /// Connect's full class name.
    pub class: &'static str,
    /// The keys under the role's prefix, as given (`value.converter.schemas.enable`, …).
    pub settings: Vec<(String, String)>,
}

/// The converters of a record's key, value and headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Converters {
    pub key: ConverterChoice,
    pub value: ConverterChoice,
    pub header: ConverterChoice,
}

/// What a worker uses when its config names no converter: bytes as they are (Kafka Connect
/// requires the worker to name them).
pub const DEFAULT_CONVERTER: &str = "org.apache.kafka.connect.converters.ByteArrayConverter";
/// Connect's default header converter: header values in Connect's text form.
pub const DEFAULT_HEADER_CONVERTER: &str = convert::SIMPLE_HEADER_CONVERTER;

impl ConverterChoice {
    /// The choice a config makes for `role`: its class key and prefixed settings, or none when
    /// the class key is absent. The error names the key and says what is accepted.
    pub fn from_config(role: Role, config: &[(String, String)]) -> Result<Option<Self>, ConverterConfigError> {
        let Some(given) = wharf_connect::model::last_value(config, role.key()).map(str::trim) else {
            return Ok(None);
        };
        Self::new(role, given, config).map(Some)
    }

    /// `class` for `role`, with the settings under its prefix in `config`.
    pub fn new(role: Role, class: &str, config: &[(String, String)]) -> Result<Self, ConverterConfigError> {
        let prefix = format!("{}.", role.key());
        let settings: Vec<(String, String)> = config.iter().filter(|(k, _)| k.starts_with(&prefix)).cloned().collect();
        // Built once here, so that a bad class or setting is refused when the config is read.
        Converter::new(role, class, &Settings::under(role.key(), &settings))?;
        let class = convert::class_name(class).unwrap_or(DEFAULT_CONVERTER);
        Ok(ConverterChoice { role, class, settings })
    }

    fn settings(&self) -> Settings {
        Settings::under(self.role.key(), &self.settings)
    }

    /// A converter of this choice, for one task.
    pub fn build(&self) -> Converter {
        // Checked when the choice was made.
        Converter::new(self.role, self.class, &self.settings())
            .unwrap_or(Converter::ByteArray(convert::ByteArrayConverter))
    }
}

impl Converters {
    /// A worker's converters: the classes it names, or the defaults.
    pub fn of_worker(config: &[(String, String)]) -> Result<Self, ConverterConfigError> {
        let choose = |role: Role, default: &str| -> Result<ConverterChoice, ConverterConfigError> {
            match ConverterChoice::from_config(role, config)? {
                Some(choice) => Ok(choice),
                None => ConverterChoice::new(role, default, config),
            }
        };
        Ok(Converters {
            key: choose(Role::Key, DEFAULT_CONVERTER)?,
            value: choose(Role::Value, DEFAULT_CONVERTER)?,
            header: choose(Role::Header, DEFAULT_HEADER_CONVERTER)?,
        })
    }
}

/// A connector's own converter choices; none where it takes the worker's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConverterOverrides {
    pub key: Option<ConverterChoice>,
    pub value: Option<ConverterChoice>,
    pub header: Option<ConverterChoice>,
}

impl ConverterOverrides {
    pub fn of_connector(config: &[(String, String)]) -> Result<Self, ConverterConfigError> {
        Ok(ConverterOverrides {
            key: ConverterChoice::from_config(Role::Key, config)?,
            value: ConverterChoice::from_config(Role::Value, config)?,
            header: ConverterChoice::from_config(Role::Header, config)?,
        })
    }

    /// The converters the connector's tasks use.
    pub fn over(&self, worker: &Converters) -> Converters {
        Converters {
            key: self.key.clone().unwrap_or_else(|| worker.key.clone()),
            value: self.value.clone().unwrap_or_else(|| worker.value.clone()),
            header: self.header.clone().unwrap_or_else(|| worker.header.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn kafkas_stock_worker_converters_are_accepted() {
        let worker = Converters::of_worker(&pairs(&[
            ("key.converter", "org.apache.kafka.connect.json.JsonConverter"),
            ("value.converter", "org.apache.kafka.connect.json.JsonConverter"),
            ("key.converter.schemas.enable", "true"),
            ("value.converter.schemas.enable", "true"),
        ]))
        .unwrap();
        assert_eq!(worker.value.class, "org.apache.kafka.connect.json.JsonConverter");
        assert_eq!(worker.header.class, DEFAULT_HEADER_CONVERTER);
        assert!(matches!(worker.value.build(), Converter::Json(_)));
    }

    #[test]
    fn a_connector_that_names_a_converter_uses_its_own_settings_only() {
        let worker = Converters::of_worker(&pairs(&[
            ("value.converter", "JsonConverter"),
            ("value.converter.schemas.enable", "false"),
        ]))
        .unwrap();
        let connector = ConverterOverrides::of_connector(&pairs(&[("value.converter", "StringConverter")])).unwrap();
        let chosen = connector.over(&worker);
        assert_eq!(chosen.value.class, "org.apache.kafka.connect.storage.StringConverter");
        assert!(chosen.value.settings.is_empty());
        assert_eq!(chosen.key.class, DEFAULT_CONVERTER);
        assert_eq!(ConverterOverrides::of_connector(&[]).unwrap().over(&worker), worker);
    }

    #[test]
    fn unknown_classes_and_bad_settings_are_refused_with_the_key() {
        let e = Converters::of_worker(&pairs(&[("value.converter", "io.confluent.connect.avro.AvroConverter")]))
            .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("value.converter"));
        assert!(e.message.contains("JsonConverter"), "{}", e.message);
        let e = ConverterOverrides::of_connector(&pairs(&[
            ("key.converter", "org.apache.kafka.connect.json.JsonConverter"),
            ("key.converter.decimal.format", "HEX"),
        ]))
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("key.converter.decimal.format"));
        let e = Converters::of_worker(&pairs(&[("header.converter", "AvroConverter")])).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("header.converter"));
        let e = Converters::of_worker(&pairs(&[("value.converter", "SimpleHeaderConverter")])).unwrap_err();
        assert!(e.message.contains("header values only"), "{}", e.message);
        let header = Converters::of_worker(&pairs(&[("header.converter", "LongConverter")])).unwrap().header;
        assert!(matches!(header.build(), Converter::Number(_)));
    }
}
