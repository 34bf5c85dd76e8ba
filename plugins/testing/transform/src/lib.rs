//! A transform plugin for tests, and an example of one: it upper-cases a record's string value
//! (or one field of a struct value, `field`), drops records whose value holds `drop.containing`,
//! refuses those that hold `fail.containing` (the whole batch fails, as a plugin's error does),
//! and adds a header `transformed-by=test-transform` to each record it keeps.

use wharf_sdk::*;

struct TestTransform {
    field: Option<String>,
    drop_containing: Option<String>,
    fail_containing: Option<String>,
}

/// A setting, none when it is missing or empty.
fn setting(config: &Config, key: &str) -> Option<String> {
    config.get(key).filter(|v| !v.is_empty()).map(String::from)
}

impl TestTransform {
    /// The text a record's value holds: a string, bytes as UTF-8, or the struct field's string.
    fn text(&self, record: &TransformRecord) -> Option<String> {
        match (&record.value, &self.field) {
            (Some(Part::Data { schema: Some(schema), value: Value::Struct(values) }), Some(field)) => {
                let at = schema.fields.iter().position(|f| f.name == *field)?;
                match values.get(at)? {
                    Value::String(s) => Some(s.clone()),
                    _ => None,
                }
            }
            (Some(part), _) => part.text().map(|t| t.into_owned()),
            (None, _) => None,
        }
    }

    /// Upper-cases the value's string, or the struct field's.
    fn upper(&self, record: &mut TransformRecord) {
        match (&mut record.value, &self.field) {
            (Some(Part::Data { schema: Some(schema), value: Value::Struct(values) }), Some(field)) => {
                if let Some(at) = schema.fields.iter().position(|f| f.name == *field) {
                    if let Some(Value::String(s)) = values.get_mut(at) {
                        *s = s.to_uppercase();
                    }
                }
            }
            (Some(Part::Data { value: Value::String(s), .. }), None) => *s = s.to_uppercase(),
            (Some(Part::Bytes(bytes)), None) => bytes.make_ascii_uppercase(),
            _ => {}
        }
    }
}

impl Transform for TestTransform {
    fn describe() -> TransformInfo {
        TransformInfo {
            name: "test-transform".into(),
            version: "0.1.0".into(),
            description: "Upper-cases values, drops or refuses some records (for tests)".into(),
            config: vec![
                optional_key(
                    "field",
                    ConfigType::String,
                    "",
                    "The struct field to upper-case (the whole value if empty)",
                ),
                optional_key("drop.containing", ConfigType::String, "", "Drop records whose value holds this text"),
                optional_key("fail.containing", ConfigType::String, "", "Refuse records whose value holds this text"),
            ],
        }
    }

    fn validate(settings: &Config) -> Vec<ConfigProblem> {
        match (setting(settings, "drop.containing"), setting(settings, "fail.containing")) {
            (Some(a), Some(b)) if a == b => vec![ConfigProblem {
                name: "fail.containing".into(),
                message: "is the same text as drop.containing: a record cannot be both dropped and refused".into(),
            }],
            _ => Vec::new(),
        }
    }

    fn open(settings: Config) -> Result<Self, ConnectorError> {
        Ok(TestTransform {
            field: setting(&settings, "field"),
            drop_containing: setting(&settings, "drop.containing"),
            fail_containing: setting(&settings, "fail.containing"),
        })
    }

    fn apply(&mut self, mut record: TransformRecord) -> Result<Option<TransformRecord>, ConnectorError> {
        let text = self.text(&record).unwrap_or_default();
        if self.fail_containing.as_deref().is_some_and(|f| text.contains(f)) {
            return Err(ConnectorError::Fatal(format!("the value {text:?} is refused on purpose")));
        }
        if self.drop_containing.as_deref().is_some_and(|d| text.contains(d)) {
            return Ok(None);
        }
        self.upper(&mut record);
        record.headers.push(Header::new("transformed-by", Part::Bytes(b"test-transform".to_vec())));
        Ok(Some(record))
    }
}

transform_plugin!(TestTransform);
