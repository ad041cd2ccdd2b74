//! Runs a scenario file and prints its summary as JSON (scenario echo omitted).
use fabricsim_run::{run, Scenario};
fn main() {
    let path = std::env::args().nth(1).expect("usage: summary SCENARIO.toml");
    let sc = Scenario::from_toml(&std::fs::read_to_string(&path).expect("readable")).unwrap_or_else(|e| panic!("{e}"));
    let mut r = run(sc, &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    r.summary.as_object_mut().unwrap().remove("scenario");
    println!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
}
