//! Finds libzerfoo for linking: `$ZERFOO_LIB_DIR`, then pkg-config (`zerfoo.pc`, at least the
//! header's version), then the system library directories. With the `dynamic` feature nothing
//! is linked: the library is opened at run time.
use std::env;
use std::path::{Path, PathBuf};

/// The version of include/zerfoo.h that src/bindings.rs was generated from (major.minor).
const HEADER_VERSION: &str = "0.6.0";

fn has_lib(dir: &Path) -> Option<&'static str> {
    if dir.join("libzerfoo.so").exists() || dir.join("libzerfoo.dylib").exists() {
        Some("zerfoo")
    } else if dir.join("libzerfoo.so.0").exists() {
        // A build or runtime directory without the development symlink.
        Some("libzerfoo.so.0")
    } else {
        None
    }
}

fn link_dir(dir: &Path, name: &str) {
    println!("cargo:rustc-link-search=native={}", dir.display());
    if name == "zerfoo" {
        println!("cargo:rustc-link-lib=dylib=zerfoo");
    } else {
        println!("cargo:rustc-link-lib=dylib:+verbatim={name}");
    }
    // For dependents' build scripts (DEP_ZERFOO_LIB_DIR), e.g. to set an rpath.
    println!("cargo:lib_dir={}", dir.display());
}

fn main() {
    println!("cargo:rerun-if-env-changed=ZERFOO_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_DYNAMIC").is_some() {
        return; // loaded at run time by zerfoo_sys::load()
    }

    // 1. An explicit directory wins.
    if let Some(dir) = env::var_os("ZERFOO_LIB_DIR") {
        let dir = PathBuf::from(dir);
        match has_lib(&dir) {
            Some(name) => return link_dir(&dir, name),
            None => panic!(
                "zerfoo-sys: ZERFOO_LIB_DIR={} contains neither libzerfoo.so nor libzerfoo.so.0; \
                 set it to the directory holding the library (e.g. the CMake build directory)",
                dir.display()
            ),
        }
    }

    // 2. An installed zerfoo.pc, new enough for these bindings.
    let pc_error = match pkg_config::Config::new()
        .atleast_version(HEADER_VERSION)
        .probe("zerfoo")
    {
        Ok(_) => return,
        Err(e) => e.to_string(),
    };

    // 3. The usual system library directories.
    for dir in [
        "/usr/local/lib",
        "/usr/local/lib64",
        "/usr/lib",
        "/usr/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
    ] {
        if let Some(name) = has_lib(Path::new(dir)) {
            return link_dir(Path::new(dir), name);
        }
    }

    panic!(
        "zerfoo-sys: cannot find libzerfoo (version >= {HEADER_VERSION}).\n\
         Set ZERFOO_LIB_DIR to the directory containing libzerfoo.so or libzerfoo.so.0 \
         (for a CMake build: ZERFOO_LIB_DIR=/path/to/zerfoo/build),\n\
         or install zerfoo and make `pkg-config zerfoo` find it (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig),\n\
         or enable the `dynamic` feature to load libzerfoo.so.0 at run time ($ZERFOO_LIBRARY or the loader path).\n\
         pkg-config said: {pc_error}"
    );
}
