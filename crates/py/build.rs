//! Records whether this extension was compiled with `-Cprofile-use` (which `pip install
//! .` adds; see `pgo/fabricsim_build.py`), so that `fabricsim bench` can say which kind of
//! build its figures come from. It says the flag was given, not that the profile matched
//! the code: a profile made before a change leaves the changed functions without counts.

fn main() {
    // Cargo reruns a build script when the flags it compiles with change; nothing else
    // is read here.
    println!("cargo:rerun-if-changed=build.rs");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    // `-Cprofile-use=P`, `--codegen=profile-use=P`, or `-C` / `--codegen` then `profile-use=P`.
    let pgo = flags.split('\x1f').any(|f| {
        f.starts_with("-Cprofile-use") || f.starts_with("--codegen=profile-use") || f.starts_with("profile-use")
    });
    println!("cargo:rustc-env=FABRICSIM_BUILD_PGO={}", if pgo { "1" } else { "0" });
}
