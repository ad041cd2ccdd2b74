//! The engine layer of fabricsim: virtual time, the event queue and random streams.
//!
//! Nothing here knows about networks. The layers above build on three guarantees:
//!
//! * [`time`]: time is an integer number of picoseconds ([`Time`], [`Dur`]); rates
//!   ([`Rate`]) convert byte counts into exact serialization times. No floating-point
//!   time exists anywhere in the simulator, so results never depend on rounding order.
//! * [`queue`]: the [`EventQueue`] (a calendar queue) pops events by time and, for
//!   equal times, in the order they were pushed. This total order makes every run
//!   reproducible. [`heap`] is the plain heap it is tested against.
//! * [`ring`]: [`Ring`], a FIFO keeping its first entries inline (queues touched on
//!   every packet).
//! * [`rng`]: [`Rng`] streams are derived from the scenario seed and a path of ids
//!   (for example `["flow", 17]`), so adding a component never perturbs the random
//!   choices of another.
//!
//! The engine never reads the wall clock.

pub mod heap;
pub mod prefetch;
pub mod queue;
pub mod ring;
pub mod rng;
pub mod time;

pub use queue::EventQueue;
pub use ring::Ring;
pub use rng::Rng;
pub use time::{Dur, Rate, Time};
