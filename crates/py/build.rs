//! Records whether this extension was compiled with profile-guided optimisation
//! (`-Cprofile-use`, which `pip install .` adds; see `pgo/fabricsim_build.py`), so that
//! `fabricsim bench` can say which kind of build its figures come from.

fn main() {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    // `-Cprofile-use=P`, or `-C` then `profile-use=P`.
    let pgo = flags.split('\x1f').any(|f| f.starts_with("-Cprofile-use") || f.starts_with("profile-use"));
    println!("cargo:rustc-env=FABRICSIM_BUILD_PGO={}", if pgo { "1" } else { "0" });
}
