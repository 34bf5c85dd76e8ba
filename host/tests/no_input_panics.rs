//! Property tests: no input makes the readers of outside input panic. A panic there would fail a
//! request at best and, under a lock, put a worker out of service.

use proptest::prelude::*;
use wharf::config::connector::check_name;
use wharf::config::properties;

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
}
