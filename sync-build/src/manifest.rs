//! The kernel crate's library name, read from its `Cargo.toml`: the PTX file's stem.

use std::fs;
use std::path::Path;

use crate::BuildError;

/// `[lib] name`, else `[package] name` with `-` as `_` (what rustc names the crate,
/// and so the `.s` file of the build).
pub(crate) fn lib_name(dir: &Path) -> Result<String, BuildError> {
    let path = dir.join("Cargo.toml");
    let manifest = fs::read_to_string(&path).map_err(|error| BuildError::Io {
        path: path.clone(),
        error,
    })?;
    let name_in = |table: &str| name_in_table(&manifest, table);
    name_in("lib")
        .or_else(|| name_in("package"))
        .map(|name| name.replace('-', "_"))
        .ok_or_else(|| {
            BuildError::Settings(format!(
                "{} names no package: is it a crate's manifest?",
                path.display()
            ))
        })
}

/// The `name = "..."` line of `[table]`, in a manifest written the usual way (one
/// key per line; a name in an inline table is not looked for).
fn name_in_table(manifest: &str, table: &str) -> Option<String> {
    let header = format!("[{table}]");
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == header;
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() == "name" {
            let value = value.trim();
            let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            let rest = &value[1..];
            return rest.find(quote).map(|end| rest[..end].to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::name_in_table;

    #[test]
    fn lib_name_wins_over_package_name() {
        let manifest =
            "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\n\n[lib]\nname = 'gpu_code'\n";
        assert_eq!(name_in_table(manifest, "lib").as_deref(), Some("gpu_code"));
        assert_eq!(
            name_in_table(manifest, "package").as_deref(),
            Some("my-kernels")
        );
        let no_lib = "[package]\nname=\"k\"\n[dependencies]\nname = \"other\"\n";
        assert_eq!(name_in_table(no_lib, "lib"), None);
        assert_eq!(name_in_table(no_lib, "package").as_deref(), Some("k"));
    }
}
