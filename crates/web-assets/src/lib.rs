//! The browser client, built and committed under `web/dist`, embedded in the binary at compile
//! time so that `cargo build` alone gives a gateway that serves a working page: no npm, no wasm
//! toolchain on the machine that builds or runs the server (the sqlx "offline data" model: the
//! built artefact is committed, and `scripts/build-web --check` fails when it is stale).
//!
//! The files are embedded in debug builds too (rust-embed's `debug-embed`), so tests run the same
//! bytes a release serves; the build script makes cargo rebuild this crate when any file under
//! `web/dist` changes, appears or disappears.
//!
//! A [`Bundle`] answers a path with an [`Asset`]: its bytes, its `Content-Type`, whether it is a
//! content-hashed file that may be cached forever, and an ETag. [`Bundle::embedded`] is the
//! committed bundle; [`Bundle::from_files`] builds one from bytes, for tests of whoever serves it.

use rust_embed::RustEmbed;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

/// The page every route of the client answers with (the page routes on `location.pathname`).
pub const INDEX: &str = "index.html";

/// The file recording the sha256 of the bundle's inputs (`scripts/build-web` writes it and
/// `--check` compares it); not served.
pub const INPUTS_FILE: &str = "inputs.sha256";

/// The directory of the bundle's hashed files (Vite's `assets/`), served under `/assets/`.
pub const ASSETS_DIR: &str = "assets/";

/// Shortest content hash in a file name that makes it immutable (Vite writes 8 characters).
const MIN_HASH_CHARS: usize = 8;

/// `web/dist`, embedded.
#[derive(RustEmbed)]
#[folder = "../../web/dist/"]
struct Dist;

/// One file of the bundle, ready to be served.
#[derive(Clone, PartialEq, Eq)]
pub struct Asset {
    bytes: Cow<'static, [u8]>,
    content_type: Cow<'static, str>,
    immutable: bool,
    etag: String,
}

impl Asset {
    fn new(path: &str, bytes: Cow<'static, [u8]>, sha256: [u8; 32]) -> Asset {
        let hex: String = sha256[..16].iter().map(|b| format!("{b:02x}")).collect();
        Asset {
            content_type: content_type(path),
            immutable: is_hashed_asset(path),
            etag: format!("\"{hex}\""),
            bytes,
        }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes as a `'static` slice when they are embedded (no copy), else an owned copy:
    /// what an HTTP body wants.
    pub fn static_bytes(&self) -> Cow<'static, [u8]> {
        self.bytes.clone()
    }

    /// The `Content-Type` to serve it with ([`content_type`]).
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// Whether the name carries a content hash ([`is_hashed_asset`]): such a file never changes
    /// under its name, so it may be cached for a year without revalidation.
    pub fn is_immutable(&self) -> bool {
        self.immutable
    }

    /// A strong ETag (quoted, from the sha256 of the bytes), for revalidating `index.html`.
    pub fn etag(&self) -> &str {
        &self.etag
    }
}

impl fmt::Debug for Asset {
    /// The shape, not the bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Asset")
            .field("len", &self.bytes.len())
            .field("content_type", &self.content_type)
            .field("immutable", &self.immutable)
            .field("etag", &self.etag)
            .finish()
    }
}

/// Why a set of files is not a bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// There is no `index.html`, so no page to serve.
    #[error("the bundle has no {INDEX}")]
    MissingIndex,
    /// A path that is not a plain relative path (`..`, a leading `/`, a backslash, empty parts).
    #[error("the bundle path {0:?} is not a plain relative path")]
    BadPath(String),
}

/// A built client: its files by path relative to `web/dist` (`index.html`,
/// `assets/index-AbCd1234.js`), with the recorded hash of its inputs.
///
/// Cheap to clone (the files are shared).
#[derive(Clone, Debug)]
pub struct Bundle {
    files: Arc<BTreeMap<String, Asset>>,
    inputs_sha256: Option<String>,
}

/// The embedded bundle, indexed once.
static EMBEDDED: LazyLock<Bundle> = LazyLock::new(|| {
    let files = Dist::iter()
        .filter_map(|path| {
            let file = Dist::get(&path)?;
            let asset = Asset::new(&path, file.data, file.metadata.sha256_hash());
            Some((path.into_owned(), asset))
        })
        .collect::<BTreeMap<_, _>>();
    Bundle::from_map(files).expect("the build script checked that web/dist has index.html")
});

impl Bundle {
    /// The bundle embedded from `web/dist` when this crate was compiled.
    pub fn embedded() -> Bundle {
        EMBEDDED.clone()
    }

    /// A bundle of the given files (paths relative to the bundle's root), for tests of a server
    /// that serves one. Refuses a set without `index.html` and paths that are not plain.
    pub fn from_files<P, B>(files: impl IntoIterator<Item = (P, B)>) -> Result<Bundle, BundleError>
    where
        P: Into<String>,
        B: Into<Vec<u8>>,
    {
        let mut map = BTreeMap::new();
        for (path, bytes) in files {
            let path = path.into();
            let bytes = bytes.into();
            let sha256: [u8; 32] = Sha256::digest(&bytes).into();
            let asset = Asset::new(&path, Cow::Owned(bytes), sha256);
            map.insert(path, asset);
        }
        Bundle::from_map(map)
    }

    fn from_map(files: BTreeMap<String, Asset>) -> Result<Bundle, BundleError> {
        if let Some(bad) = files.keys().find(|path| !is_plain(path)) {
            return Err(BundleError::BadPath(bad.clone()));
        }
        if !files.contains_key(INDEX) {
            return Err(BundleError::MissingIndex);
        }
        let inputs_sha256 = files
            .get(INPUTS_FILE)
            .and_then(|asset| std::str::from_utf8(asset.bytes()).ok())
            .map(|text| text.trim().to_string());
        Ok(Bundle {
            files: Arc::new(files),
            inputs_sha256,
        })
    }

    /// The file at `path` (relative, no leading `/`), if the bundle has it. Only exact paths of
    /// the bundle match: `..` or any other spelling finds nothing.
    pub fn get(&self, path: &str) -> Option<&Asset> {
        self.files.get(path)
    }

    /// The page (`index.html`), which every bundle has.
    pub fn index(&self) -> &Asset {
        self.files
            .get(INDEX)
            .expect("a bundle is only built with index.html")
    }

    /// The hex sha256 of the inputs the bundle was built from, as `inputs.sha256` records it
    /// (trimmed), if the bundle has that file: what `scripts/build-web --check` compares.
    pub fn inputs_sha256(&self) -> Option<&str> {
        self.inputs_sha256.as_deref()
    }

    /// Every path of the bundle, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// Total bytes of the bundle's files (uncompressed), for the startup log.
    pub fn total_bytes(&self) -> usize {
        self.files.values().map(|asset| asset.bytes.len()).sum()
    }
}

/// Whether `path` is relative with no empty, `.` or `..` part and no backslash.
fn is_plain(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// The `Content-Type` of a file by its extension: the contract's types for what the page is made
/// of (`text/javascript`, `application/wasm`, `text/css`, `text/html`, with `charset=utf-8` on
/// text), then `mime_guess`'s answer, then `application/octet-stream` (with `nosniff`, a browser
/// will not run such a file).
pub fn content_type(path: &str) -> Cow<'static, str> {
    let extension = path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    let known = match extension.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "txt" | "sha256" => "text/plain; charset=utf-8",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "png" => "image/png",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "webmanifest" => "application/manifest+json",
        _ => "",
    };
    if !known.is_empty() {
        return Cow::Borrowed(known);
    }
    match mime_guess::from_path(path).first() {
        Some(mime) => Cow::Owned(mime.essence_str().to_string()),
        None => Cow::Borrowed("application/octet-stream"),
    }
}

/// Whether `path` is a content-hashed file of the bundle: under `assets/`, with a name of the
/// form `name-HASH.ext` whose hash has at least 8 characters of `[A-Za-z0-9_-]` (what Vite and
/// the wasm build write). Such a file is never rewritten under the same name.
pub fn is_hashed_asset(path: &str) -> bool {
    let Some(name) = path.strip_prefix(ASSETS_DIR) else {
        return false;
    };
    if name.contains('/') {
        return false;
    }
    let stem = name.split_once('.').map_or(name, |(stem, _)| stem);
    let Some((_, hash)) = stem.split_once('-') else {
        return false;
    };
    hash.len() >= MIN_HASH_CHARS
        && hash
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_bundle_has_a_page_and_its_inputs_hash() {
        let bundle = Bundle::embedded();
        let index = bundle.index();
        assert_eq!(index.content_type(), "text/html; charset=utf-8");
        assert!(!index.is_immutable(), "index.html must be revalidated");
        assert!(
            std::str::from_utf8(index.bytes())
                .expect("utf-8")
                .contains("<html")
        );
        let hash = bundle.inputs_sha256().expect("inputs.sha256 is embedded");
        assert_eq!(hash.len(), 64, "a hex sha256: {hash:?}");
        assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn the_embedded_bundle_is_exactly_web_dist() {
        let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/dist");
        let mut on_disk = Vec::new();
        let mut dirs = vec![dist.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("web/dist is readable") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let relative = path.strip_prefix(&dist).expect("under dist");
                    let relative = relative.to_string_lossy().replace('\\', "/");
                    let bytes = std::fs::read(&path).expect("a readable file");
                    on_disk.push((relative, bytes));
                }
            }
        }
        on_disk.sort();
        let bundle = Bundle::embedded();
        let embedded: Vec<(String, Vec<u8>)> = bundle
            .paths()
            .map(|p| {
                (
                    p.to_string(),
                    bundle.get(p).expect("listed").bytes().to_vec(),
                )
            })
            .collect();
        assert_eq!(
            embedded.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            on_disk.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            "the embedded paths are web/dist's (a stale build of this crate otherwise)"
        );
        assert!(embedded == on_disk, "the embedded bytes are web/dist's");
    }

    #[test]
    fn every_embedded_file_under_assets_is_hashed() {
        let bundle = Bundle::embedded();
        let assets: Vec<&str> = bundle
            .paths()
            .filter(|p| p.starts_with(ASSETS_DIR))
            .collect();
        assert!(!assets.is_empty(), "the page loads its code from /assets/");
        for path in assets {
            assert!(
                bundle.get(path).expect("listed").is_immutable(),
                "{path} is under assets/ without a content hash: it could be cached stale"
            );
        }
    }

    /// The placeholder bundle (committed only so the embed compiles before the real client was
    /// built) must not leave files behind once the real bundle replaces it, e.g. after a merge.
    #[test]
    fn a_real_bundle_carries_no_placeholder_files() {
        let bundle = Bundle::embedded();
        let index = std::str::from_utf8(bundle.index().bytes()).expect("utf-8");
        if index.contains("name=\"hidden-front-bundle\" content=\"placeholder\"") {
            return;
        }
        let leftovers: Vec<&str> = bundle
            .paths()
            .filter(|path| path.starts_with("assets/placeholder-"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "web/dist holds the real client and files of the placeholder bundle: delete {leftovers:?}"
        );
    }

    #[test]
    fn types_are_the_contracts() {
        assert_eq!(
            content_type("assets/engine_bg-AbCd1234.wasm"),
            "application/wasm"
        );
        assert_eq!(
            content_type("assets/index-AbCd1234.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            content_type("assets/x-AbCd1234.MJS"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            content_type("assets/index-AbCd1234.css"),
            "text/css; charset=utf-8"
        );
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("favicon.svg"), "image/svg+xml");
        assert_eq!(content_type("photo.jpeg"), "image/jpeg", "from mime_guess");
        assert_eq!(content_type("LICENSE"), "application/octet-stream");
        assert_eq!(content_type("x.unknownext"), "application/octet-stream");
    }

    #[test]
    fn only_hashed_names_under_assets_are_immutable() {
        for hashed in [
            "assets/index-BZk2w3_a.js",
            "assets/index-B-k2w3_a.js",
            "assets/hidden_front_web_engine_bg-DdX0Aq9b.wasm",
            "assets/my-chunk-AbCdEf12.js",
            "assets/index-AbCd1234.css.map",
        ] {
            assert!(is_hashed_asset(hashed), "{hashed}");
        }
        for not in [
            "index.html",
            "inputs.sha256",
            "favicon.ico",
            "assets/logo.svg",
            "assets/index-short.js",
            "assets/index-Ab+d1234.js",
            "assets/sub/index-AbCd1234.js",
            "other/index-AbCd1234.js",
        ] {
            assert!(!is_hashed_asset(not), "{not}");
        }
    }

    #[test]
    fn a_bundle_from_files_answers_exact_paths_only() {
        let bundle = Bundle::from_files([
            ("index.html", b"<!doctype html><html></html>".to_vec()),
            ("assets/app-AbCd1234.js", b"export {}".to_vec()),
            (
                "inputs.sha256",
                format!("{}\n", "ab".repeat(32)).into_bytes(),
            ),
        ])
        .expect("a bundle");
        assert_eq!(bundle.inputs_sha256(), Some("ab".repeat(32).as_str()));
        let js = bundle.get("assets/app-AbCd1234.js").expect("found");
        assert!(js.is_immutable());
        assert_eq!(js.bytes(), b"export {}");
        for missing in [
            "/assets/app-AbCd1234.js",
            "assets/../index.html",
            "assets/",
            "",
        ] {
            assert!(bundle.get(missing).is_none(), "{missing:?}");
        }
        assert_eq!(
            bundle.total_bytes(),
            28 + 9 + 65,
            "index, the script and the hash line"
        );
    }

    #[test]
    fn etags_follow_the_bytes() {
        let one = Bundle::from_files([("index.html", "a")]).expect("a bundle");
        let same = Bundle::from_files([("index.html", "a")]).expect("a bundle");
        let other = Bundle::from_files([("index.html", "b")]).expect("a bundle");
        assert_eq!(one.index().etag(), same.index().etag());
        assert_ne!(one.index().etag(), other.index().etag());
        assert!(one.index().etag().starts_with('"') && one.index().etag().ends_with('"'));
    }

    #[test]
    fn embedded_etags_are_the_sha256_of_the_bytes() {
        let bundle = Bundle::embedded();
        let index = bundle.index();
        let rebuilt = Bundle::from_files([(INDEX, index.bytes().to_vec())]).expect("a bundle");
        assert_eq!(index.etag(), rebuilt.index().etag());
    }

    #[test]
    fn bad_bundles_are_refused() {
        assert_eq!(
            Bundle::from_files([("assets/a-AbCd1234.js", "x")]).unwrap_err(),
            BundleError::MissingIndex
        );
        for bad in ["../index.html", "/index.html", "a//b", "a\\b", "./a", ""] {
            assert_eq!(
                Bundle::from_files([("index.html", "x"), (bad, "y")]).unwrap_err(),
                BundleError::BadPath(bad.to_string()),
                "{bad:?}"
            );
        }
    }
}
