//! Property tests: no bytes from Kafka make a converter panic. A panic there would fail a task
//! on one bad record instead of sending it to the error handling.

use proptest::prelude::*;
use wharf_connect::convert::{Converter, Role, Settings};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

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
