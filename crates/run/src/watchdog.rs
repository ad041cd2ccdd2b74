//! The stall watchdog: ends a run whose messages are under way but make no progress.

use crate::sim::{owns, Sim};
use fabricsim_engine::{Dur, Time};

/// What the stall watchdog counts as progress: new data placed at receivers, messages
/// started and completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Mark {
    pub(crate) placed: u64,
    pub(crate) started: usize,
    pub(crate) received: usize,
}

impl std::ops::Add for Mark {
    type Output = Mark;
    fn add(self, o: Mark) -> Mark {
        Mark { placed: self.placed + o.placed, started: self.started + o.started, received: self.received + o.received }
    }
}

/// Ends a run whose messages are under way but make no progress for `stall_after`
/// (`Scenario::stall_after`): a transport that retries forever into a dead link keeps
/// events coming, so the queue never runs dry. It looks at the progress every eighth
/// of the limit of simulated time and every 65,536 events (16 windows of a partitioned
/// run). Progress only changes at events, so looks due in a gap between two events are
/// taken before the later one with the progress as it stands (backed-off timers are
/// milliseconds apart: looking only at events ended runs up to 3.2 limits late). The
/// first look to see progress may come an eighth after it, and the stall is declared at
/// the first look a limit after that one: between one and one and a quarter limits
/// after the last progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Watchdog {
    limit: Option<Dur>,
    mark: Mark,
    since: Time,
    next_look: Time,
}

impl Watchdog {
    pub(crate) fn new(limit: Option<Dur>) -> Watchdog {
        let next_look = limit.map_or(Time::MAX, |l| Time::ZERO + Self::step(l));
        Watchdog { limit, mark: Mark::default(), since: Time::ZERO, next_look }
    }

    /// Simulated time between looks.
    pub(crate) fn step(limit: Dur) -> Dur {
        Dur((limit.ps() / 8).max(1))
    }

    /// Whether to look at the progress now: a look time reached, or `periodic` (every
    /// so many events).
    #[inline]
    pub(crate) fn due(&self, now: Time, periodic: bool) -> bool {
        self.limit.is_some() && (now >= self.next_look || periodic)
    }

    /// Whether looks fall due before the next event, at `next` (then call
    /// [`Watchdog::look_until`] before handling it).
    #[inline]
    pub(crate) fn gap_before(&self, next: Time) -> bool {
        next > self.next_look
    }

    /// Takes the looks due before `next` with progress `mark` (nothing happens between
    /// events, so each sees the same). Returns the look time at which the run stalled.
    /// (Rare: kept out of the run loop's code.)
    #[cold]
    #[inline(never)]
    pub(crate) fn look_until(&mut self, next: Time, mark: Mark) -> Option<Time> {
        let limit = self.limit?;
        let step = Self::step(limit).ps();
        let first = self.next_look;
        if first >= next {
            return None;
        }
        if self.stalled(first, mark) {
            return Some(first);
        }
        // The later looks see what this one saw: under way without progress, the run
        // stalls at the first look a limit after `since`.
        let looks_to = |t: Time| t.0.saturating_sub(first.0).div_ceil(step);
        if mark.started != mark.received {
            let at = Time(first.0.saturating_add(looks_to(self.since + limit).saturating_mul(step)));
            if at < next {
                self.next_look = Time(at.0.saturating_add(step));
                return Some(at);
            }
        }
        self.next_look = Time(first.0.saturating_add(looks_to(next).saturating_mul(step)));
        None
    }

    /// Whether, at `now` with progress `mark`, messages have been under way without
    /// progress for longer than the limit.
    pub(crate) fn stalled(&mut self, now: Time, mark: Mark) -> bool {
        let Some(limit) = self.limit else { return false };
        self.next_look = Time(now.0.saturating_add(Self::step(limit).ps()));
        if mark != self.mark || mark.started == mark.received {
            self.mark = mark;
            self.since = now;
            return false;
        }
        now.since(self.since) >= limit
    }
}

impl Sim {
    /// What the stall watchdog counts as progress, over this copy's hosts. (Rare: kept
    /// out of the run loop's code.)
    #[inline(never)]
    pub(crate) fn mark(&self) -> Mark {
        let placed = self.nic.bytes_placed(|h| owns(&self.part, h));
        Mark { placed, started: self.started, received: self.done }
    }
}
