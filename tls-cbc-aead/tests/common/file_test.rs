//! A reader for BoringSSL's `FileTest` vector format, which this workspace's own
//! known-answer files share: records of `NAME: value` lines separated by blank lines,
//! `#` comments, values in hex or (BoringSSL's form for text) in double quotes; a name
//! with no value is an empty field, a bare `NAME` a flag.
//!
//! Standalone (std only): `tls-cbc-aead`'s known-answer test and the workspace's
//! unpublished `tests` crate (which exports it as `tests::file_test`) both include this
//! file, so there is one parser; it lives here so that the published crate's tests
//! build from its own files.

/// One record: its fields in file order, and where it starts.
#[derive(Debug)]
pub struct Record {
    /// The 1-based line of its first field.
    pub line: usize,
    fields: Vec<(String, String)>,
}

impl Record {
    /// The field's raw text, if present.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The field's bytes; panics, naming the record's line, if it is absent.
    pub fn bytes(&self, name: &str) -> Vec<u8> {
        let v = self
            .text(name)
            .unwrap_or_else(|| panic!("line {}: no {name}", self.line));
        value(v)
    }

    /// The field's bytes, if present.
    pub fn opt_bytes(&self, name: &str) -> Option<Vec<u8>> {
        self.text(name).map(value)
    }

    /// Whether the record has the field (a flag such as `FAILS`).
    pub fn has(&self, name: &str) -> bool {
        self.text(name).is_some()
    }

    /// Panics unless every field's name is one of `known`: a field a test ignores
    /// silently could change what the record means.
    pub fn only(&self, known: &[&str]) {
        for (k, _) in &self.fields {
            assert!(
                known.contains(&k.as_str()),
                "line {}: unknown field {k}",
                self.line
            );
        }
    }
}

/// Every record of `text`.
pub fn parse(text: &str) -> Vec<Record> {
    let mut records = Vec::new();
    let mut fields = Vec::new();
    let mut start = 0;
    for (i, line) in text.lines().chain([""]).enumerate() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            if !fields.is_empty() {
                records.push(Record {
                    line: start,
                    fields: core::mem::take(&mut fields),
                });
            }
            continue;
        }
        if fields.is_empty() {
            start = i + 1;
        }
        let (k, v) = line.split_once(':').unwrap_or((line, ""));
        fields.push((k.trim().to_string(), v.trim().to_string()));
    }
    records
}

/// A value's bytes: a string in double quotes as its bytes, else hex.
pub fn value(v: &str) -> Vec<u8> {
    match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(text) => text.as_bytes().to_vec(),
        None => hex(v),
    }
}

/// Bytes from hex digits.
pub fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd-length hex {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
        .collect()
}

/// Vector files that a script of the workspace fetches (they are not committed), and the
/// environment variables that say where they are and whether a test may go without.
#[derive(Debug)]
pub struct Fetched {
    /// Names the directory, if not `target/<default_dir>` at the workspace root (both
    /// crates that include this file sit one level below it).
    pub dir_var: &'static str,
    pub default_dir: &'static str,
    /// Set (as CI sets it after fetching), a missing file fails the test.
    pub required_var: &'static str,
    /// The workspace's script that fetches them.
    pub script: &'static str,
}

impl Fetched {
    /// The directory, if all of `files` are in it. Without them a test reports itself
    /// skipped, unless `required_var` is set: then this panics.
    pub fn dir(&self, files: &[&str], what: &str) -> Option<std::path::PathBuf> {
        let dir = std::env::var_os(self.dir_var).map_or_else(
            || {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../target")
                    .join(self.default_dir)
            },
            std::path::PathBuf::from,
        );
        if files.iter().all(|f| dir.join(f).is_file()) {
            return Some(dir);
        }
        assert!(
            std::env::var_os(self.required_var).is_none(),
            "{} is set, but {what} not in {}: run `bash {}`",
            self.required_var,
            dir.display(),
            self.script
        );
        eprintln!(
            "{what} not found: test SKIPPED (`bash {}` fetches the files)",
            self.script
        );
        None
    }
}

/// BoringSSL's vector files (`crypto/cipher/test/`), which the workspace's
/// `tests/fetch-boringssl-vectors.sh` puts in `target/boringssl-vectors`.
pub const BORINGSSL: Fetched = Fetched {
    dir_var: "BORINGSSL_VECTORS_DIR",
    default_dir: "boringssl-vectors",
    required_var: "BORINGSSL_VECTORS_REQUIRED",
    script: "tests/fetch-boringssl-vectors.sh",
};

/// Where BoringSSL's vector file `file` is, if fetched (see [`BORINGSSL`]).
pub fn boringssl_vectors(file: &str) -> Option<std::path::PathBuf> {
    Some(
        BORINGSSL
            .dir(&[file], &format!("BoringSSL's {file}"))?
            .join(file),
    )
}
