//! The one error of configuration and construction: where in the
//! configuration the problem is (a path of field names and list indices)
//! and what is wrong, kept apart so that no front end parses one out of
//! the other.
//!
//! As pydantic-core's `ValError` (`src/errors/location.rs`,
//! `with_outer_location`), an error is made where the problem is found,
//! knowing only its own field, and each caller that put the item there
//! prepends its own part on the way out:
//!
//! ```
//! use alphaqos_sim::error::ConfigError;
//! let e = ConfigError::at("mss_bytes", "must be positive").with_outer("tcp").with_outer(3).with_outer("flows");
//! assert_eq!(e.path(), "flows[3].tcp.mss_bytes");
//! assert_eq!(e.to_string(), "flows[3].tcp.mss_bytes: must be positive");
//! ```

use std::fmt;

/// One step of a path into the configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Loc {
    /// A field of an object (`mss_bytes`).
    Field(String),
    /// An item of a list (`flows[3]`: the 3).
    Index(usize),
}

impl From<&str> for Loc {
    fn from(s: &str) -> Loc {
        Loc::Field(s.to_string())
    }
}

impl From<String> for Loc {
    fn from(s: String) -> Loc {
        Loc::Field(s)
    }
}

impl From<usize> for Loc {
    fn from(i: usize) -> Loc {
        Loc::Index(i)
    }
}

/// A configuration the engine refuses: `loc` (outermost first; empty if
/// the problem is the whole configuration's) and `msg`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub loc: Vec<Loc>,
    pub msg: String,
}

impl ConfigError {
    /// A problem of the item being built as a whole.
    pub fn new(msg: impl Into<String>) -> ConfigError {
        ConfigError { loc: Vec::new(), msg: msg.into() }
    }

    /// A problem of the item's field (or list item) `loc`.
    pub fn at(loc: impl Into<Loc>, msg: impl Into<String>) -> ConfigError {
        ConfigError { loc: vec![loc.into()], msg: msg.into() }
    }

    /// A problem at `path` below the item, a path written in the code
    /// (`"pairs.list[2][0]"`: names, dots and `[index]`), never an
    /// error's text.
    pub fn at_path(path: &str, msg: impl Into<String>) -> ConfigError {
        let mut loc = Vec::new();
        for part in path.split('.') {
            let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
            if !name.is_empty() {
                loc.push(Loc::Field(name.to_string()));
            }
            while let Some((index, tail)) = rest.split_once(']') {
                loc.push(Loc::Index(index.parse().expect("an index in a path written in the code")));
                rest = tail.strip_prefix('[').unwrap_or(tail);
            }
        }
        ConfigError { loc, msg: msg.into() }
    }

    /// The same problem seen from the item that holds this one at `outer`
    /// (pydantic-core's `with_outer_location`).
    pub fn with_outer(mut self, outer: impl Into<Loc>) -> ConfigError {
        self.loc.insert(0, outer.into());
        self
    }

    /// The path as text: `flows[3].tcp.mss_bytes` (empty for the whole
    /// configuration).
    pub fn path(&self) -> String {
        let mut out = String::new();
        for l in &self.loc {
            match l {
                Loc::Index(i) => out.push_str(&format!("[{i}]")),
                Loc::Field(f) if out.is_empty() => out.push_str(f),
                Loc::Field(f) => {
                    out.push('.');
                    out.push_str(f);
                }
            }
        }
        out
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.loc.is_empty() {
            f.write_str(&self.msg)
        } else {
            write!(f, "{}: {}", self.path(), self.msg)
        }
    }
}

impl std::error::Error for ConfigError {}

/// `result.outer(part)`: [`ConfigError::with_outer`] on the error of a result.
pub trait Outer<T> {
    fn outer(self, outer: impl Into<Loc>) -> Result<T, ConfigError>;
}

impl<T> Outer<T> for Result<T, ConfigError> {
    fn outer(self, outer: impl Into<Loc>) -> Result<T, ConfigError> {
        self.map_err(|e| e.with_outer(outer))
    }
}

/// A problem met outside the configuration (a run-time refusal of the
/// control plane, `control::ControlError`) as the problem of the
/// configuration item, or of its field `loc`, that led to it.
pub trait Whole<T> {
    fn whole(self) -> Result<T, ConfigError>;
    /// ... of the item's field `loc`.
    fn at(self, loc: impl Into<Loc>) -> Result<T, ConfigError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_outer_prepends_each_callers_part() {
        let e = ConfigError::at("limit_pkts", "must be positive");
        assert_eq!(e.path(), "limit_pkts");
        let e = e.with_outer("fifo").with_outer("queue_ab").with_outer(1usize).with_outer("links");
        assert_eq!(
            e.loc,
            [Loc::Field("links".into()), Loc::Index(1), Loc::Field("queue_ab".into()), Loc::Field("fifo".into()), Loc::Field("limit_pkts".into())]
        );
        assert_eq!(e.path(), "links[1].queue_ab.fifo.limit_pkts");
        assert_eq!(e.to_string(), "links[1].queue_ab.fifo.limit_pkts: must be positive");
        assert_eq!(e.msg, "must be positive");
    }

    #[test]
    fn an_index_first_and_an_empty_path() {
        let e = ConfigError::new("a flow needs two different hosts");
        assert_eq!((e.path().as_str(), e.to_string().as_str()), ("", "a flow needs two different hosts"));
        let e = ConfigError::at(0usize, "x").with_outer("schedule");
        assert_eq!(e.path(), "schedule[0]");
        let e = ConfigError::at_path("pairs.list[2][1]", "x").with_outer("poisson");
        assert_eq!(e.loc, [Loc::Field("poisson".into()), Loc::Field("pairs".into()), Loc::Field("list".into()), Loc::Index(2), Loc::Index(1)]);
        // A message with ": " in it stays the message.
        let r: Result<(), ConfigError> = Err(ConfigError::at("red", "red: max_p must be in (0, 1]"));
        let e = r.outer("queue_ab").unwrap_err();
        assert_eq!((e.path().as_str(), e.msg.as_str()), ("queue_ab.red", "red: max_p must be in (0, 1]"));
    }
}
