//! The JSON building blocks of the typed reader: [`Scalar`] (a value where a scalar is
//! expected), [`Typed`] (a value that must be of one kind) and the [`FromObject`] visitor that
//! keeps the listed keys of an object and skips every other value without building it.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Map, Value};

/// A JSON value where a scalar is expected: arrays and objects are skipped, only their kind
/// is kept.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Scalar {
    /// `null`.
    #[default]
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string.
    Str(String),
    /// An array (skipped).
    Array,
    /// An object (skipped).
    Object,
}

impl Scalar {
    /// The number as `f64` (`serde_json::Value::as_f64`).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::Int(i) => Some(i as f64),
            Self::Float(f) => Some(f),
            _ => None,
        }
    }

    /// An integer, also from an integral float below 9e18.
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            Self::Int(i) => Some(i),
            Self::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Some(f as i64),
            _ => None,
        }
    }

    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn to_value(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(*b),
            Self::Int(i) => json!(i),
            Self::Float(f) => json!(f),
            Self::Str(s) => Value::String(s.clone()),
            Self::Array => Value::Array(Vec::new()),
            Self::Object => Value::Object(Map::new()),
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Array)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Object)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// A value expected to be an object (or, for CPUs, an array): `Wrong` when it is not.
#[derive(Debug, Clone, PartialEq)]
pub enum Typed<T> {
    /// The expected kind, read.
    Ok(T),
    /// Another kind of JSON value (skipped).
    Wrong,
}

impl<T> Typed<T> {
    /// The value, if it has the expected kind.
    pub fn ok(&self) -> Option<&T> {
        match self {
            Self::Ok(t) => Some(t),
            Self::Wrong => None,
        }
    }
}

/// Builds `T` from a JSON object, key by key.
pub(super) trait FromObject: Default {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
    /// Called once the object has ended.
    fn finish(&mut self) {}
}

struct ObjectVisitor<T>(std::marker::PhantomData<T>);

fn skip_any<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

pub(super) fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visitor methods of a value that must be of one kind: every other kind is
/// skipped and gives `Typed::Wrong`.
macro_rules! wrong_kind_visits {
    ($t:ty) => {
        fn visit_bool<E>(self, _: bool) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_str<E>(self, _: &str) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_unit<E>(self) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_none<E>(self) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
    };
}
pub(super) use wrong_kind_visits;

impl<'de, T: FromObject> Visitor<'de> for ObjectVisitor<T> {
    type Value = Typed<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    wrong_kind_visits!(T);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Typed<T>, A::Error> {
        skip_any(seq)?;
        Ok(Typed::Wrong)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Typed<T>, A::Error> {
        let mut t = T::default();
        // Keys are read as owned strings: the reader streams, so nothing can be borrowed.
        while let Some(key) = map.next_key::<String>()? {
            t.entry(&key, &mut map)?;
        }
        t.finish();
        Ok(Typed::Ok(t))
    }
}

impl<'de, T: FromObject> Deserialize<'de> for Typed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjectVisitor(std::marker::PhantomData))
    }
}
