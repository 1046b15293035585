//! The request corpus: every request a run may send, loaded into memory
//! before the run, and the rule that picks one for each send.
//!
//! Sources:
//! - a single request built from the command line (method, path, headers, body);
//! - a directory: each regular, non-hidden file (sorted by name) is one body,
//!   sent with the command line's method, path and headers;
//! - a JSONL file: one object per line,
//!   `{"method", "path", "headers", "body" | "body_b64" | "body_file", "weight"}`,
//!   all keys optional; `body_file` is relative to the JSONL file's folder.
//!   Blank lines and lines starting with `#` are skipped.
//!
//! Picking is a pure function of the run seed and the send's slot index, so
//! which request slot *i* carries does not depend on which connection or
//! thread sends it: `random` draws from the weights with a generator seeded by
//! `(seed, i)` (Walker's alias method, O(1) a pick); `round-robin` takes entry
//! `i mod n` and ignores weights.

use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::uri::PathAndQuery;
use http::Method;
use rand::SeedableRng;
use rand_distr::weighted::WeightedAliasIndex;
use rand_distr::Distribution;
use rand_pcg::Pcg64Mcg;
use serde::Deserialize;

use crate::error::LoadError;

/// One request a run can send.
#[derive(Debug, Clone)]
pub struct Entry {
    /// HTTP method (ignored by frame targets).
    pub method: Method,
    /// Path and query (ignored by frame targets).
    pub path: PathAndQuery,
    /// Headers, on top of which the sender adds `Host` when absent.
    pub headers: HeaderMap,
    /// Body (or frame payload).
    pub body: Bytes,
    /// Relative weight for `random` order.
    pub weight: f64,
}

/// How entries are picked for successive sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Weighted draws, seeded by `(seed, slot index)`.
    #[default]
    Random,
    /// Entry `i mod n`; weights ignored.
    RoundRobin,
}

impl FromStr for Order {
    type Err = LoadError;
    fn from_str(s: &str) -> Result<Self, LoadError> {
        match s {
            "random" => Ok(Self::Random),
            "round-robin" => Ok(Self::RoundRobin),
            _ => Err(LoadError::BadArgument(format!(
                "corpus order {s:?}: expected random or round-robin"
            ))),
        }
    }
}

/// The loaded corpus and its picker.
#[derive(Debug)]
pub struct Corpus {
    entries: Vec<Entry>,
    alias: Option<WeightedAliasIndex<f64>>,
    order: Order,
    seed: u64,
}

/// The command line's request: defaults for every corpus entry.
#[derive(Debug, Clone)]
pub struct Template {
    /// Method when an entry gives none.
    pub method: Method,
    /// Path when an entry gives none.
    pub path: PathAndQuery,
    /// Headers every entry starts from (an entry's own headers win).
    pub headers: HeaderMap,
    /// Body of the single request when there is no corpus.
    pub body: Bytes,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    method: Option<String>,
    path: Option<String>,
    #[serde(default)]
    headers: serde_json::Map<String, serde_json::Value>,
    body: Option<String>,
    body_b64: Option<String>,
    body_file: Option<PathBuf>,
    weight: Option<f64>,
}

impl Corpus {
    /// A corpus of one request: the template itself.
    pub fn single(template: Template) -> Self {
        let entry = Entry {
            method: template.method,
            path: template.path,
            headers: template.headers,
            body: template.body,
            weight: 1.0,
        };
        Self::new(vec![entry], Order::RoundRobin, 0).expect("one entry of weight 1 is valid")
    }

    /// Loads a directory of bodies or a JSONL file.
    pub fn load(
        path: &Path,
        template: &Template,
        order: Order,
        seed: u64,
    ) -> Result<Self, LoadError> {
        let meta = fs::metadata(path)
            .map_err(|e| LoadError::Corpus(format!("corpus {}: {e}", path.display())))?;
        let entries = if meta.is_dir() {
            load_dir(path, template)?
        } else {
            load_jsonl(path, template)?
        };
        Self::new(entries, order, seed)
    }

    fn new(entries: Vec<Entry>, order: Order, seed: u64) -> Result<Self, LoadError> {
        if entries.is_empty() {
            return Err(LoadError::Corpus("the corpus has no requests".into()));
        }
        let alias = match order {
            Order::Random if entries.len() > 1 => Some(
                WeightedAliasIndex::new(entries.iter().map(|e| e.weight).collect())
                    .map_err(|e| LoadError::Corpus(format!("corpus weights: {e}")))?,
            ),
            _ => None,
        };
        Ok(Self {
            entries,
            alias,
            order,
            seed,
        })
    }

    /// The entry for slot `index`.
    #[inline]
    pub fn pick(&self, index: u64) -> &Entry {
        &self.entries[self.pick_index(index)]
    }

    /// The number (position in [`Corpus::entries`]) of the entry for slot `index`.
    #[inline]
    pub fn pick_index(&self, index: u64) -> usize {
        match (&self.alias, self.order) {
            (Some(alias), Order::Random) => {
                let mut rng = Pcg64Mcg::seed_from_u64(mix(self.seed, index));
                alias.sample(&mut rng)
            }
            _ => (index % self.entries.len() as u64) as usize,
        }
    }

    /// The same corpus with every entry rewritten by `f`, which gets it with
    /// its number from 1 (weights, order and seed unchanged).
    pub fn try_map(
        self,
        mut f: impl FnMut(Entry, usize) -> Result<Entry, LoadError>,
    ) -> Result<Self, LoadError> {
        let entries = self
            .entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| f(e, i + 1))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { entries, ..self })
    }

    /// All entries, in load order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

/// A 64-bit mix of seed and index (splitmix64's finaliser), so neighbouring
/// slots get unrelated generator seeds.
fn mix(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn load_dir(dir: &Path, template: &Template) -> Result<Vec<Entry>, LoadError> {
    let io = |e: std::io::Error| LoadError::Corpus(format!("corpus {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = Vec::new();
    for item in fs::read_dir(dir).map_err(io)? {
        let item = item.map_err(io)?;
        let hidden = item.file_name().to_string_lossy().starts_with('.');
        if !hidden && item.file_type().map_err(io)?.is_file() {
            files.push(item.path());
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(LoadError::Corpus(format!(
            "corpus {}: the folder has no files",
            dir.display()
        )));
    }
    files
        .iter()
        .map(|f| {
            let body = fs::read(f)
                .map_err(|e| LoadError::Corpus(format!("corpus {}: {e}", f.display())))?;
            Ok(Entry {
                body: Bytes::from(body),
                weight: 1.0,
                ..entry_from(template)
            })
        })
        .collect()
}

fn entry_from(template: &Template) -> Entry {
    Entry {
        method: template.method.clone(),
        path: template.path.clone(),
        headers: template.headers.clone(),
        body: template.body.clone(),
        weight: 1.0,
    }
}

fn load_jsonl(file: &Path, template: &Template) -> Result<Vec<Entry>, LoadError> {
    let text = fs::read_to_string(file)
        .map_err(|e| LoadError::Corpus(format!("corpus {}: {e}", file.display())))?;
    let base = file.parent().unwrap_or(Path::new("."));
    let mut entries = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let at = |why: String| LoadError::Corpus(format!("{}:{}: {why}", file.display(), n + 1));
        let line: Line = serde_json::from_str(trimmed).map_err(|e| at(e.to_string()))?;
        entries.push(parse_line(line, template, base).map_err(at)?);
    }
    Ok(entries)
}

fn parse_line(line: Line, template: &Template, base: &Path) -> Result<Entry, String> {
    let mut entry = entry_from(template);
    if let Some(m) = line.method {
        entry.method = Method::from_bytes(m.as_bytes()).map_err(|_| format!("bad method {m:?}"))?;
    }
    if let Some(p) = line.path {
        if !p.starts_with('/') {
            return Err(format!("path {p:?} must start with '/'"));
        }
        entry.path = p.parse().map_err(|e| format!("bad path {p:?}: {e}"))?;
    }
    for (name, value) in line.headers {
        let serde_json::Value::String(value) = value else {
            return Err(format!("header {name:?}: the value must be a string"));
        };
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("bad header name {name:?}"))?;
        let value =
            HeaderValue::from_str(&value).map_err(|_| format!("bad value for header {name}"))?;
        entry.headers.insert(name, value);
    }
    let given = [
        line.body.is_some(),
        line.body_b64.is_some(),
        line.body_file.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err("give at most one of body, body_b64, body_file".into());
    }
    if let Some(b) = line.body {
        entry.body = Bytes::from(b);
    } else if let Some(b) = line.body_b64 {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(b.trim())
            .map_err(|e| format!("body_b64 is not base64: {e}"))?;
        entry.body = Bytes::from(raw);
    } else if let Some(f) = line.body_file {
        let path = base.join(&f);
        let raw = fs::read(&path).map_err(|e| format!("body_file {}: {e}", path.display()))?;
        entry.body = Bytes::from(raw);
    }
    if let Some(w) = line.weight {
        if !(w.is_finite() && w > 0.0) {
            return Err(format!("weight must be a positive number, not {w}"));
        }
        entry.weight = w;
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Template {
        Template {
            method: Method::GET,
            path: PathAndQuery::from_static("/default"),
            headers: HeaderMap::new(),
            body: Bytes::new(),
        }
    }

    fn jsonl(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn jsonl_lines_fill_in_from_the_template() {
        let (dir, path) = jsonl(concat!(
            "# a comment\n",
            "{\"method\":\"POST\",\"path\":\"/a\",\"headers\":{\"X-K\":\"v\"},\"body\":\"hi\",\"weight\":3}\n",
            "\n",
            "{\"body_b64\":\"AAEC\"}\n",
            "{\"body_file\":\"b.bin\"}\n",
        ));
        fs::write(dir.path().join("b.bin"), b"file").unwrap();
        let c = Corpus::load(&path, &template(), Order::Random, 1).unwrap();
        let e = c.entries();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].method, Method::POST);
        assert_eq!(e[0].path.as_str(), "/a");
        assert_eq!(e[0].headers["x-k"], "v");
        assert_eq!(&e[0].body[..], b"hi");
        assert_eq!(e[0].weight, 3.0);
        assert_eq!(e[1].method, Method::GET);
        assert_eq!(e[1].path.as_str(), "/default");
        assert_eq!(&e[1].body[..], &[0, 1, 2]);
        assert_eq!(&e[2].body[..], b"file");
    }

    #[test]
    fn bad_lines_are_named_with_their_line_number() {
        for (text, needle) in [
            ("{}\n{\"bdy\":1}\n", ":2: unknown field `bdy`"),
            (
                "{\"body\":\"a\",\"body_b64\":\"YQ==\"}",
                ":1: give at most one",
            ),
            ("{\"body_b64\":\"***\"}", ":1: body_b64 is not base64"),
            ("{\"body_file\":\"missing.bin\"}", ":1: body_file"),
            ("{\"weight\":0}", ":1: weight must be a positive number"),
            ("{\"weight\":-1}", ":1: weight"),
            (
                "{\"path\":\"nope\"}",
                ":1: path \"nope\" must start with '/'",
            ),
            ("{\"method\":\"G E T\"}", ":1: bad method"),
            ("{\"headers\":{\"X\":1}}", ":1: header \"X\""),
            ("not json", ":1: expected"),
            ("# only a comment\n", "no requests"),
        ] {
            let (_dir, path) = jsonl(text);
            let err = Corpus::load(&path, &template(), Order::Random, 1).unwrap_err();
            assert_eq!(err.code(), "corpus_invalid");
            assert!(err.to_string().contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_directory_is_one_body_per_file_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("b"), b"2").unwrap();
        fs::write(dir.path().join("a"), b"1").unwrap();
        fs::write(dir.path().join(".hidden"), b"x").unwrap();
        let c = Corpus::load(dir.path(), &template(), Order::RoundRobin, 0).unwrap();
        let bodies: Vec<_> = (0..4).map(|i| c.pick(i).body.clone()).collect();
        assert_eq!(
            bodies,
            ["1", "2", "1", "2"].map(|s| Bytes::from_static(s.as_bytes()))
        );
        let empty = tempfile::tempdir().unwrap();
        let err = Corpus::load(empty.path(), &template(), Order::Random, 0).unwrap_err();
        assert!(err.to_string().contains("has no files"));
    }

    #[test]
    fn random_picks_follow_weights_and_depend_only_on_seed_and_index() {
        let (_dir, path) = jsonl("{\"body\":\"a\",\"weight\":3}\n{\"body\":\"b\",\"weight\":1}\n");
        let c1 = Corpus::load(&path, &template(), Order::Random, 42).unwrap();
        let c2 = Corpus::load(&path, &template(), Order::Random, 42).unwrap();
        let n = 40_000u64;
        let a = (0..n).filter(|&i| &c1.pick(i).body[..] == b"a").count() as f64;
        assert!(
            (a / n as f64 - 0.75).abs() < 0.01,
            "share of a: {}",
            a / n as f64
        );
        // Reproducible in any order of asking.
        for i in (0..1000).rev() {
            assert_eq!(c1.pick(i).body, c2.pick(i).body);
        }
        let c3 = Corpus::load(&path, &template(), Order::Random, 43).unwrap();
        assert!((0..1000).any(|i| c1.pick(i).body != c3.pick(i).body));
    }
}
