//! Value types of scenario files that need more than serde's defaults: human-readable
//! durations, offered rates, handler-duration distributions, and whole numbers within a
//! key's own bounds. Each one parses with an
//! error message that says what was expected, and serializes back to the same notation so a
//! resolved scenario reads like the file the user wrote.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// A duration written as text: `"500ms"`, `"10s"`, `"2m"`, `"1h 30m"` (humantime notation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    pub fn from_millis(ms: u64) -> Self {
        HumanDuration(Duration::from_millis(ms))
    }

    pub fn from_secs(s: u64) -> Self {
        HumanDuration(Duration::from_secs(s))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_zero() {
            return f.write_str("0s");
        }
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"500ms\", \"10s\" or \"2m\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                if v.trim() == "0" {
                    return Ok(HumanDuration(Duration::ZERO));
                }
                humantime::parse_duration(v.trim()).map(HumanDuration).map_err(|e| {
                    E::custom(format!(
                        "invalid duration \"{v}\" ({e}); write e.g. \"500ms\", \"10s\" or \"2m\""
                    ))
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HumanDuration, E> {
                Err(E::custom(format!(
                    "a bare number ({v}) has no unit; write e.g. \"{v}ms\" or \"{v}s\""
                )))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HumanDuration, E> {
                self.visit_i64(v as i64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<HumanDuration, E> {
                Err(E::custom(format!(
                    "a bare number ({v}) has no unit; write e.g. \"{v}s\""
                )))
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for HumanDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration with its unit: \"500ms\", \"10s\", \"2m\", \"1h 30m\" (or \"0\").",
            "examples": ["500ms", "10s", "2m", "1h 30m"]
        })
    }
}

/// A whole number from `MIN` to `MAX`: out of range or not a number, the error names the
/// key's own bounds (serde's `u32` would say "from 0 to 4294967295").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Whole<const MIN: u32, const MAX: u32>(pub u32);

impl<const MIN: u32, const MAX: u32> Serialize for Whole<MIN, MAX> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.0)
    }
}

impl<'de, const MIN: u32, const MAX: u32> Deserialize<'de> for Whole<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const MIN: u32, const MAX: u32>;
        impl<const MIN: u32, const MAX: u32> Visitor<'_> for V<MIN, MAX> {
            type Value = Whole<MIN, MAX>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a whole number from {MIN} to {MAX}")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                match u32::try_from(v) {
                    Ok(n) if (MIN..=MAX).contains(&n) => Ok(Whole(n)),
                    _ => Err(E::custom(format!(
                        "must be between {MIN} and {MAX}, got {v}"
                    ))),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
        }
        d.deserialize_any(V::<MIN, MAX>)
    }
}

impl<const MIN: u32, const MAX: u32> schemars::JsonSchema for Whole<MIN, MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Whole{MIN}To{MAX}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "integer", "minimum": MIN, "maximum": MAX })
    }
}

/// When a capacity confirmation's fresh table gets its first vacuum.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum FirstVacuum {
    /// As late as autovacuum can come: autovacuum is kept off the table for one
    /// `autovacuum_naptime`, then one VACUUM runs, paced as autovacuum's (PostgreSQL).
    Late,
    /// Whenever the server's autovacuum comes, somewhere within its first naptime.
    Whenever,
}

impl fmt::Display for FirstVacuum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FirstVacuum::Late => "late",
            FirstVacuum::Whenever => "whenever",
        })
    }
}

/// The standard upset a capacity's whole confirmations carry once the queue has settled.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum UpsetKind {
    /// Every worker stops taking jobs for the upset's size (a deploy, a GC pause).
    #[default]
    Pause,
    /// The producers send the upset's size of extra arrivals: twice the rate for that long.
    Burst,
    /// No upset: the confirmation holds the rate untriggered, as before.
    None,
}

impl fmt::Display for UpsetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UpsetKind::Pause => "pause",
            UpsetKind::Burst => "burst",
            UpsetKind::None => "none",
        })
    }
}

/// How long a capacity answer must hold on a fresh queue: `"auto"` (the larger of 3 minutes
/// and 3 × the server's autovacuum_naptime), a duration, or `"off"` (the search alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Confirm {
    #[default]
    Auto,
    Off,
    For(HumanDuration),
}

impl fmt::Display for Confirm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Confirm::Auto => f.write_str("auto"),
            Confirm::Off => f.write_str("off"),
            Confirm::For(d) => d.fmt(f),
        }
    }
}

impl std::str::FromStr for Confirm {
    type Err = String;

    fn from_str(v: &str) -> Result<Confirm, String> {
        match v.trim() {
            "auto" => Ok(Confirm::Auto),
            "off" => Ok(Confirm::Off),
            d => humantime::parse_duration(d)
                .map(|d| Confirm::For(HumanDuration(d)))
                .map_err(|_| {
                    format!("invalid value \"{v}\"; write \"auto\", \"off\" or a duration such as \"5m\"")
                }),
        }
    }
}

impl Serialize for Confirm {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Confirm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(de::Error::custom)
    }
}

impl schemars::JsonSchema for Confirm {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Confirm".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "\"auto\" (the larger of 3 minutes and 3 × autovacuum_naptime), \"off\", or a duration such as \"5m\".",
            "examples": ["auto", "off", "5m"]
        })
    }
}

/// An offered load: jobs per second across the whole producer fleet (open loop), or `"max"`
/// (closed loop: every producer enqueues again as soon as its previous insert commits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    PerSecond(f64),
    Max,
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rate::PerSecond(r) => write!(f, "{r} jobs/s"),
            Rate::Max => f.write_str("max (closed loop)"),
        }
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Rate::PerSecond(r) if r.fract() == 0.0 && *r < 1e15 => s.serialize_i64(*r as i64),
            Rate::PerSecond(r) => s.serialize_f64(*r),
            Rate::Max => s.serialize_str("max"),
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of jobs per second (>= 0) or \"max\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Rate, E> {
                if v.is_finite() && v >= 0.0 {
                    Ok(Rate::PerSecond(v))
                } else {
                    Err(E::custom(format!(
                        "rate must be a number of jobs per second >= 0 or \"max\", got {v}"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Rate, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Rate, E> {
                self.visit_f64(v as f64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Rate, E> {
                match v {
                    "max" => Ok(Rate::Max),
                    _ => Err(E::custom(format!(
                        "rate must be a number of jobs per second or \"max\", got \"{v}\""
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for Rate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Rate".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Jobs per second across the producer fleet (open loop), or \"max\" (closed loop).",
            "anyOf": [
                { "type": "number", "minimum": 0 },
                { "const": "max" }
            ]
        })
    }
}

/// How long the simulated handler works on one job.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum DurationDist {
    /// Always the same duration.
    Fixed(HumanDuration),
    /// Uniform between `min` and `max`.
    Uniform {
        min: HumanDuration,
        max: HumanDuration,
    },
    /// Exponential with the given mean (memoryless service times).
    Exponential { mean: HumanDuration },
    /// Log-normal with the given median and shape `sigma` (long right tail, like real I/O).
    Lognormal { median: HumanDuration, sigma: f64 },
}

impl DurationDist {
    /// The distribution's mean.
    pub fn mean(&self) -> Duration {
        match *self {
            DurationDist::Fixed(d) => d.0,
            DurationDist::Uniform { min, max } => (min.0 + max.0) / 2,
            DurationDist::Exponential { mean } => mean.0,
            DurationDist::Lognormal { median, sigma } => {
                median.0.mul_f64((sigma * sigma / 2.0).exp().min(1e6))
            }
        }
    }
}

impl Default for DurationDist {
    fn default() -> Self {
        DurationDist::Fixed(HumanDuration(Duration::ZERO))
    }
}

impl fmt::Display for DurationDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationDist::Fixed(d) => write!(f, "fixed {d}"),
            DurationDist::Uniform { min, max } => write!(f, "uniform {min}..{max}"),
            DurationDist::Exponential { mean } => write!(f, "exponential, mean {mean}"),
            DurationDist::Lognormal { median, sigma } => {
                write!(f, "lognormal, median {median}, sigma {sigma}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize)]
    struct Holder {
        d: HumanDuration,
        r: Rate,
    }

    #[test]
    fn durations_and_rates_round_trip_through_toml() {
        let h: Holder = toml::from_str("d = \"1m 500ms\"\nr = 300").unwrap();
        assert_eq!(h.d.0, Duration::from_millis(60_500));
        assert_eq!(h.r, Rate::PerSecond(300.0));
        let text = toml::to_string(&h).unwrap();
        let back: Holder = toml::from_str(&text).unwrap();
        assert_eq!(back.d, h.d);
        assert_eq!(back.r, h.r);
    }

    #[test]
    fn bad_values_say_what_was_expected() {
        let e = toml::from_str::<Holder>("d = 5\nr = 1").err().unwrap();
        assert!(e.message().contains("has no unit"), "{}", e.message());
        let e = toml::from_str::<Holder>("d = \"5s\"\nr = -2")
            .err()
            .unwrap();
        assert!(e.message().contains(">= 0"), "{}", e.message());
        let e = toml::from_str::<Holder>("d = \"5s\"\nr = \"fast\"")
            .err()
            .unwrap();
        assert!(e.message().contains("\"max\""), "{}", e.message());
    }
}
