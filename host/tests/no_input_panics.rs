//! Property tests: no input makes the readers of outside input panic. A panic there would fail a
//! request at best and, under a lock, put a worker out of service.

use proptest::prelude::*;
use wharf::config::connector::check_name;
use wharf::config::properties;
use wharf::convert::{Converter, Role, Settings};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_properties_parser_takes_any_text(text in any::<String>()) {
        let _ = properties::parse(&text, "fuzzed.properties");
    }

    #[test]
    fn the_properties_parser_takes_text_made_of_its_own_syntax(
        text in proptest::collection::vec(
            prop_oneof![
                Just("\\".to_string()), Just("=".to_string()), Just(":".to_string()), Just("\n".to_string()),
                Just("\r\n".to_string()), Just("#".to_string()), Just("!".to_string()), Just(" ".to_string()),
                Just("\\u".to_string()), Just("\\u00e9".to_string()), Just("\\uZZ".to_string()), Just("key".to_string()),
                "[a-z\\\\u0-9]{0,6}",
            ],
            0..40,
        )
    ) {
        let _ = properties::parse(&text.concat(), "fuzzed.properties");
    }

    #[test]
    fn the_name_rule_takes_any_name(name in any::<String>()) {
        let _ = check_name(&name);
    }

    /// Header bytes from Kafka, any at all, read through SimpleHeaderConverter, and what it read
    /// written back: neither panics, and what a header's text reads as always writes again.
    #[test]
    fn simple_header_converter_takes_any_header_bytes(
        bytes in prop_oneof![
            any::<Vec<u8>>(),
            proptest::collection::vec(
                prop_oneof![
                    Just("[".to_string()), Just("]".to_string()), Just("{".to_string()), Just("}".to_string()),
                    Just(",".to_string()), Just(":".to_string()), Just("\"".to_string()), Just("\\".to_string()),
                    Just(" ".to_string()), Just("null".to_string()), Just("true".to_string()), Just("-".to_string()),
                    Just("2024-01-02".to_string()), Just("12:34:56.789Z".to_string()), Just("T".to_string()),
                    "[0-9]{1,25}(\\.[0-9]{0,8})?(e-?[0-9]{1,4})?", "[a-zé☃]{0,4}",
                ],
                0..30,
            ).prop_map(|parts| parts.concat().into_bytes()),
        ]
    ) {
        let settings = Settings::under("header.converter", &[]);
        let mut converter = Converter::new(Role::Header, "SimpleHeaderConverter", &settings).unwrap();
        let data = converter.to_data(Some(&bytes)).unwrap();
        prop_assert!(converter.from_data(&data).is_ok(), "{:?} read as {:?} does not write back", bytes, data);
    }
}
