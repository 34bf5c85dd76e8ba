//! [`to_value`]: any `serde::Serialize` type as a schemaless [`Value`] (feature `serde`), the
//! shape JsonConverter with `schemas.enable=false` writes as the same JSON serde_json would:
//! structs and maps become maps with their keys, sequences and tuples arrays, `None` and `()`
//! null, a unit enum variant its name, any other variant a one-entry map. Unsigned integers take
//! the next wider signed type (a `u64` past `i64::MAX` is refused).
//!
//! ```
//! #[derive(serde::Serialize)]
//! struct Reading { sensor: String, celsius: f64, tags: Vec<&'static str> }
//!
//! let value = wharf_sdk::to_value(&Reading { sensor: "a1".into(), celsius: 21.5, tags: vec!["roof"] }).unwrap();
//! let record_value = wharf_sdk::Part::schemaless(value);
//! # let _ = record_value;
//! ```

use serde::ser::{self, Serialize};

use crate::data::Value;

/// Why a value could not be turned into data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        Error(message.to_string())
    }
}

/// The value as schemaless Connect data.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, Error> {
    value.serialize(ValueSerializer)
}

struct ValueSerializer;

/// An array or tuple being built.
pub struct SeqBuilder(Vec<Value>);

/// A map or struct being built, with the key waiting for its value.
pub struct MapBuilder {
    entries: Vec<(Value, Value)>,
    key: Option<Value>,
}

/// A variant with fields: a one-entry map of its name to what it holds.
pub struct VariantBuilder<B> {
    name: &'static str,
    inner: B,
}

fn variant(name: &str, inner: Value) -> Value {
    Value::Map(vec![(Value::String(name.to_string()), inner)])
}

impl ser::Serializer for ValueSerializer {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = SeqBuilder;
    type SerializeTuple = SeqBuilder;
    type SerializeTupleStruct = SeqBuilder;
    type SerializeTupleVariant = VariantBuilder<SeqBuilder>;
    type SerializeMap = MapBuilder;
    type SerializeStruct = MapBuilder;
    type SerializeStructVariant = VariantBuilder<MapBuilder>;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Ok(Value::Boolean(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        Ok(Value::Int8(v))
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        Ok(Value::Int16(v))
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        Ok(Value::Int32(v))
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        Ok(Value::Int64(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        Ok(Value::Int16(i16::from(v)))
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        Ok(Value::Int32(i32::from(v)))
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        Ok(Value::Int64(i64::from(v)))
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        i64::try_from(v)
            .map(Value::Int64)
            .map_err(|_| Error(format!("{v} is larger than the largest int64, the widest integer of Connect's data")))
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        Ok(Value::Float32(v))
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        Ok(Value::Float64(v))
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Error> {
        Ok(Value::Bytes(v.to_vec()))
    }
    fn serialize_none(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<Value, Error> {
        Ok(Value::String(variant.to_string()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        name: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        Ok(variant(name, value.serialize(ValueSerializer)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqBuilder, Error> {
        Ok(SeqBuilder(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqBuilder, Error> {
        Ok(SeqBuilder(Vec::with_capacity(len)))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<SeqBuilder, Error> {
        Ok(SeqBuilder(Vec::with_capacity(len)))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        name: &'static str,
        len: usize,
    ) -> Result<VariantBuilder<SeqBuilder>, Error> {
        Ok(VariantBuilder { name, inner: SeqBuilder(Vec::with_capacity(len)) })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapBuilder, Error> {
        Ok(MapBuilder { entries: Vec::with_capacity(len.unwrap_or(0)), key: None })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<MapBuilder, Error> {
        Ok(MapBuilder { entries: Vec::with_capacity(len), key: None })
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        name: &'static str,
        len: usize,
    ) -> Result<VariantBuilder<MapBuilder>, Error> {
        Ok(VariantBuilder { name, inner: MapBuilder { entries: Vec::with_capacity(len), key: None } })
    }
}

impl ser::SerializeSeq for SeqBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.0.push(to_value(value)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Array(self.0))
    }
}

impl ser::SerializeTuple for SeqBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value, Error> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for SeqBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value, Error> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleVariant for VariantBuilder<SeqBuilder> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(&mut self.inner, value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(variant(self.name, ser::SerializeSeq::end(self.inner)?))
    }
}

impl ser::SerializeMap for MapBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(to_value(key)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.key.take().ok_or_else(|| Error("a map value came without its key".into()))?;
        self.entries.push((key, to_value(value)?));
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Map(self.entries))
    }
}

impl ser::SerializeStruct for MapBuilder {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.entries.push((Value::String(key.to_string()), to_value(value)?));
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Map(self.entries))
    }
}

impl ser::SerializeStructVariant for VariantBuilder<MapBuilder> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(&mut self.inner, key, value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(variant(self.name, Value::Map(self.inner.entries)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    enum Shape {
        Dot,
        Circle(f64),
        Rect { w: u8, h: u8 },
    }

    #[derive(serde::Serialize)]
    struct Thing {
        name: &'static str,
        count: u32,
        note: Option<String>,
        shapes: Vec<Shape>,
        pair: (i8, bool),
    }

    #[test]
    fn serde_types_become_schemaless_data() {
        let thing = Thing {
            name: "x",
            count: 3,
            note: None,
            shapes: vec![Shape::Dot, Shape::Circle(1.5), Shape::Rect { w: 2, h: 4 }],
            pair: (-1, true),
        };
        let s = |t: &str| Value::String(t.to_string());
        assert_eq!(
            to_value(&thing).unwrap(),
            Value::Map(vec![
                (s("name"), s("x")),
                (s("count"), Value::Int64(3)),
                (s("note"), Value::Null),
                (
                    s("shapes"),
                    Value::Array(vec![
                        s("Dot"),
                        Value::Map(vec![(s("Circle"), Value::Float64(1.5))]),
                        Value::Map(vec![(
                            s("Rect"),
                            Value::Map(vec![(s("w"), Value::Int16(2)), (s("h"), Value::Int16(4))])
                        )]),
                    ])
                ),
                (s("pair"), Value::Array(vec![Value::Int8(-1), Value::Boolean(true)])),
            ])
        );
        assert!(to_value(&u64::MAX).unwrap_err().to_string().contains("int64"));
    }
}
