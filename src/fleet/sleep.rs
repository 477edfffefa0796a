//! A sleep as long as asked. tokio's timer keeps time in whole milliseconds and fires at the
//! first tick at or after the deadline, so `sleep(1ms)` took 2.1 ms at the median here (a
//! "1 ms" handler twice as long as pgbench's `\sleep 1 ms`, which made eight workers, not the
//! server, the capacity's limit). A timerfd — Linux's high-resolution timer — registered
//! with the runtime's reactor wakes within tens of microseconds of its deadline. One per
//! worker, made on first use inside the worker's runtime; where it cannot be made, tokio's
//! timer.

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Duration;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// The timer of one worker.
#[derive(Default)]
pub struct PreciseSleep {
    timer: Option<AsyncFd<Timer>>,
    /// The timerfd could not be made or armed: tokio's timer from then on.
    unavailable: bool,
}

/// A timerfd as the reactor needs it.
struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl PreciseSleep {
    /// Sleeps for `d`.
    pub async fn sleep(&mut self, d: Duration) {
        if d.is_zero() {
            return;
        }
        if self.unavailable || self.precise(d).await.is_err() {
            self.unavailable = true;
            tokio::time::sleep(d).await;
        }
    }

    async fn precise(&mut self, d: Duration) -> std::io::Result<()> {
        let timer = match &mut self.timer {
            Some(t) => t,
            empty => {
                let flags = TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC;
                let fd = Timer(TimerFd::new(ClockId::CLOCK_MONOTONIC, flags)?);
                // SAFETY: `Timer` owns its timerfd, open until the `AsyncFd` drops it, and
                // always answers the same descriptor. Workers run on runtimes with a reactor
                // (their connections need one).
                let registered = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) };
                empty.insert(registered?)
            }
        };
        let when = Expiration::OneShot(TimeSpec::from_duration(d));
        timer.get_ref().0.set(when, TimerSetTimeFlags::empty())?;
        loop {
            let mut ready = timer.readable().await?;
            // Reading the expiration count disarms it; not yet expired is "would block".
            match ready.try_io(|t| t.get_ref().0.wait().map_err(std::io::Error::from)) {
                Ok(done) => return done,
                Err(_not_yet) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleep never ends before its time, and uses the timerfd (how much closer to its
    /// time it ends than tokio's is a measurement, not a test: see the note in docs).
    #[tokio::test(flavor = "current_thread")]
    async fn a_sleep_lasts_at_least_as_long_as_asked_on_the_timerfd() {
        let mut s = PreciseSleep::default();
        let started = std::time::Instant::now();
        for _ in 0..20 {
            s.sleep(Duration::from_millis(1)).await;
        }
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert!(s.timer.is_some() && !s.unavailable, "a timerfd on Linux");
        s.sleep(Duration::ZERO).await;
    }
}
