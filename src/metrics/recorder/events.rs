//! How each kind of event changes the recorder's figures: enqueues, claims, completions,
//! failures, crashes, reaps, a library's hello, and the observations of the sampler, the
//! faults and the harness's monitor.

use super::*;

impl Recorder {
    /// Applies one event to the figures.
    pub fn handle(&mut self, event: Event) {
        let rest = self
            .producer_event(event)
            .and_then(|e| self.worker_event(e))
            .and_then(|e| self.trouble_event(e));
        if let Some(event) = rest {
            self.observation(event);
        }
        self.live.set_outstanding(self.ledger.outstanding());
    }

    /// A committed insert: its latency from the intended time, its counts, and whether it
    /// was sent late (and with every producer connection busy).
    fn enqueued(
        &mut self,
        job: JobId,
        (intended_us, sent_us, committed_us): (u64, u64, u64),
        open_loop: bool,
        (poison, crash, behind): (bool, bool, bool),
    ) {
        self.ledger.enqueued(job);
        self.live.add_enqueued();
        let latency = committed_us.saturating_sub(intended_us);
        let lag = sent_us.saturating_sub(intended_us);
        let late = open_loop && lag > self.late_after_us;
        let (wi, wc) = (self.window_of(intended_us), self.window_of(committed_us));
        self.metrics[wi].record(Metric::Enqueue, latency);
        let insert_us = committed_us.saturating_sub(sent_us);
        let c = &mut self.counts[wc];
        c.enqueued += 1;
        c.poison_enqueued += poison as u64;
        c.crash_enqueued += crash as u64;
        c.producers_busy_us += insert_us;
        if open_loop {
            self.metrics[wi].record(Metric::ScheduleLag, lag);
            self.counts[wi].sent_late += late as u64;
            self.counts[wi].sent_late_behind += (late && behind) as u64;
        }
        let b = self.bucket(committed_us);
        b.counts.enqueued += 1;
        b.counts.producers_busy_us += insert_us;
        b.metrics.record(Metric::Enqueue, latency);
        if open_loop {
            b.metrics.record(Metric::ScheduleLag, lag);
        }
    }

    /// What producers report: inserts, their errors and doubts, dropped jobs. Other events
    /// are handed back.
    fn producer_event(&mut self, event: Event) -> Option<Event> {
        match event {
            Event::Enqueued {
                job,
                intended_us,
                sent_us,
                committed_us,
                open_loop,
                poison,
                crash,
                behind,
            } => self.enqueued(
                job,
                (intended_us, sent_us, committed_us),
                open_loop,
                (poison, crash, behind),
            ),
            Event::Fatal { role, error, .. } => self.fatal(&role, &error),
            Event::ProducerPool {
                at_us,
                connections,
                in_flight,
            } => {
                let w = self.window_of(at_us);
                let c = &mut self.counts[w];
                c.producer_connections = c.producer_connections.max(u64::from(connections));
                c.inserts_in_flight = c.inserts_in_flight.max(u64::from(in_flight));
            }
            Event::Dropped { intended_us, count } => {
                let w = self.window_of(intended_us);
                self.counts[w].dropped += count;
            }
            Event::Prefilled {
                runs,
                poison,
                crash,
                sent_us,
                committed_us,
            } => self.prefilled(&runs, (poison, crash), sent_us, committed_us),
            Event::EnqueueFailed {
                at_us,
                error,
                retrying,
            } => {
                let w = self.window_of(at_us);
                self.counts[w].enqueue_errors += 1;
                self.counts[w].enqueue_retries += retrying as u64;
                self.bucket(at_us).counts.enqueue_errors += 1;
                self.note_error(format!("enqueue: {error}"));
            }
            Event::EnqueueInDoubt { at_us, key, error } => {
                let w = self.window_of(at_us);
                self.counts[w].in_doubt_enqueues += 1;
                self.bucket(at_us).counts.enqueue_errors += 1;
                self.ledger.enqueue_in_doubt(key);
                self.doubt_changed = true;
                self.note_error(format!("enqueue (outcome unknown): {error}"));
            }
            Event::EnqueueRolledBack { at_us, key } => {
                let w = self.window_of(at_us);
                self.counts[w].rolled_back_enqueues += 1;
                self.ledger.rolled_back_keys.push(key);
            }
            other => return Some(other),
        }
        None
    }

    /// What workers report on the common path: claims, empty polls, completions, failures.
    /// Other events are handed back.
    fn worker_event(&mut self, event: Event) -> Option<Event> {
        match event {
            Event::Claimed {
                job,
                intended_us,
                started_us,
                claimed_us,
                first,
                attempt,
            } => {
                self.ledger.claimed(job, attempt);
                self.on_claimed(job, intended_us, started_us, claimed_us, first)
            }
            Event::EmptyPoll { at_us, busy_us } => {
                let w = self.window_of(at_us);
                self.counts[w].empty_polls += 1;
                self.counts[w].claim_statements += 1;
                self.busy(at_us, busy_us, 0);
                let b = self.bucket(at_us);
                b.counts.empty_polls += 1;
                b.counts.claim_statements += 1;
            }
            Event::Completed {
                job,
                intended_us,
                handler_us,
                committed_us,
                busy_us,
            } => {
                self.busy(committed_us, busy_us, handler_us);
                self.on_completed(job, intended_us, handler_us, committed_us);
            }
            Event::Failed {
                job,
                intended_us: _,
                handler_us,
                committed_us,
                dead_lettered,
                busy_us,
            } => {
                self.busy(committed_us, busy_us, handler_us);
                self.ledger.failed(job, dead_lettered);
                let _ = self.release_frozen(job, committed_us);
                self.live.add_failed(dead_lettered);
                let wc = self.window_of(committed_us);
                self.counts[wc].failed += 1;
                self.last_finished_us[wc] = self.last_finished_us[wc].max(committed_us);
                self.counts[wc].dead_lettered += dead_lettered as u64;
                self.metrics[wc].record(Metric::Handler, handler_us);
                let b = self.bucket(committed_us);
                b.counts.failed += 1;
                b.counts.dead_lettered += dead_lettered as u64;
                b.metrics.record(Metric::Handler, handler_us);
            }
            other => return Some(other),
        }
        None
    }

    /// A worker's busy time (`handler_us` of it in a handler), in the window and second it
    /// was reported in.
    fn busy(&mut self, at_us: u64, busy_us: u64, handler_us: u64) {
        let w = self.window_of(at_us);
        self.counts[w].workers_busy_us += busy_us;
        self.counts[w].handler_busy_us += handler_us;
        let b = self.bucket(at_us);
        b.counts.workers_busy_us += busy_us;
        b.counts.handler_busy_us += handler_us;
    }

    /// A claim: its time in the window and second it committed in, the job's wait in the
    /// window that scheduled it.
    fn on_claimed(
        &mut self,
        job: JobId,
        intended_us: Option<u64>,
        started_us: Option<u64>,
        claimed_us: u64,
        first: bool,
    ) {
        // A library's worker (no claim of the harness's to time) starting a job a frozen
        // worker holds: the library's own rescue of a worker that looked dead, its reap.
        if self.release_frozen(job, claimed_us) && started_us.is_none() {
            self.ledger.reaped(job, false, false);
        }
        self.rerun_orphan(job, claimed_us);
        let claim = started_us.map(|s| claimed_us.saturating_sub(s));
        let wait = intended_us.map(|t| claimed_us.saturating_sub(t));
        let wc = self.window_of(claimed_us);
        self.counts[wc].claims += 1;
        self.counts[wc].claim_statements += u64::from(first);
        if let Some(claim) = claim {
            self.metrics[wc].record(Metric::Claim, claim);
        }
        if let (Some(w), Some(t)) = (wait, intended_us) {
            let wi = self.window_of(t);
            self.metrics[wi].record(Metric::QueueWait, w);
        }
        let b = self.bucket(claimed_us);
        b.counts.claims += 1;
        b.counts.claim_statements += u64::from(first);
        if let Some(claim) = claim {
            b.metrics.record(Metric::Claim, claim);
        }
        if let Some(w) = wait {
            b.metrics.record(Metric::QueueWait, w);
        }
    }

    /// A completion: the handler's time where it committed, end to end where it was scheduled.
    fn on_completed(
        &mut self,
        job: JobId,
        intended_us: Option<u64>,
        handler_us: u64,
        committed_us: u64,
    ) {
        self.ledger.completed(job);
        let _ = self.release_frozen(job, committed_us);
        self.live.add_completed();
        let wc = self.window_of(committed_us);
        self.counts[wc].completed += 1;
        self.last_finished_us[wc] = self.last_finished_us[wc].max(committed_us);
        self.metrics[wc].record(Metric::Handler, handler_us);
        let e2e = intended_us.map(|t| committed_us.saturating_sub(t));
        if let (Some(e), Some(t)) = (e2e, intended_us) {
            let wi = self.window_of(t);
            self.metrics[wi].record(Metric::EndToEnd, e);
        }
        let b = self.bucket(committed_us);
        b.counts.completed += 1;
        b.metrics.record(Metric::Handler, handler_us);
        if let Some(e) = e2e {
            b.metrics.record(Metric::EndToEnd, e);
        }
    }

    /// Errors, crashes, freezes, reaps, and what the table settled about in-doubt outcomes.
    /// Other events are handed back.
    fn trouble_event(&mut self, event: Event) -> Option<Event> {
        match event {
            Event::WorkerError {
                at_us,
                error,
                jobs,
                in_doubt,
            } => {
                let w = self.window_of(at_us);
                self.counts[w].worker_errors += 1;
                self.bucket(at_us).counts.worker_errors += 1;
                for job in jobs {
                    self.ledger.rolled_back(job, in_doubt);
                    self.doubt_changed |= in_doubt;
                }
                self.note_error(format!("worker: {error}"));
            }
            Event::Stale {
                job,
                at_us,
                failure,
                handler_us,
                busy_us,
            } => {
                self.busy(at_us, busy_us, handler_us);
                self.ledger.stale(job);
                let _ = self.release_frozen(job, at_us);
                let w = self.window_of(at_us);
                match failure {
                    true => self.counts[w].stale_failures += 1,
                    false => self.counts[w].stale_completions += 1,
                }
            }
            Event::WorkerCrashed {
                at_us,
                slot,
                jobs,
                reported,
                cause,
            } => self.on_worker_crashed(at_us, slot, (jobs, reported), &cause),
            Event::WorkerFrozen { at_us, slot, jobs } => self.on_worker_frozen(at_us, slot, jobs),
            Event::Reaped {
                at_us,
                jobs,
                counted,
            } => self.on_reaped(at_us, jobs, counted),
            Event::Resolved { .. } | Event::InsertFound { .. } | Event::NeverCommitted { .. } => {
                if let Event::Resolved {
                    status: JobStatus::Done,
                    ..
                } = &event
                {
                    self.live.add_completed();
                }
                self.ledger.settle(&event);
                self.doubt_changed = true;
            }
            other => return Some(other),
        }
        None
    }

    /// A library's worker said hello: counted with the others that said the same.
    fn on_worker_hello(
        &mut self,
        slot: u32,
        library: Option<String>,
        settings: BTreeMap<String, String>,
    ) {
        let same = |w: &&mut LibraryWorkers| w.library == library && w.settings == settings;
        let entry = match self.library_workers.iter_mut().find(same) {
            Some(w) => w,
            None => {
                self.library_workers.push(LibraryWorkers {
                    library,
                    settings,
                    ..LibraryWorkers::default()
                });
                self.library_workers.last_mut().expect("just pushed")
            }
        };
        entry.hellos += 1;
        if !entry.slots.contains(&slot) {
            entry.slots.push(slot);
            entry.slots.sort_unstable();
        }
    }

    /// The reaper (or the queue itself) recovered these jobs; `true`: dead-lettered.
    fn on_reaped(&mut self, at_us: u64, jobs: Vec<(JobId, bool)>, counted: bool) {
        let w = self.window_of(at_us);
        for (id, dead) in jobs {
            self.counts[w].reaped += 1;
            self.counts[w].dead_lettered += dead as u64;
            if dead {
                self.live.add_dead_lettered();
            }
            self.ledger.reaped(id, dead, counted);
        }
    }

    /// Samples, probes and the bystander's statements: stored for the report.
    fn observation(&mut self, event: Event) {
        match event {
            Event::Bystander {
                intended_us,
                done_us,
                ok,
            } => {
                let w = self.window_of(intended_us);
                if !ok {
                    self.counts[w].bystander_errors += 1;
                    return;
                }
                let us = done_us.saturating_sub(intended_us).max(1);
                self.metrics[w].record(Metric::Bystander, us);
                self.bucket(done_us).metrics.record(Metric::Bystander, us);
            }

            Event::HarnessSample(sample) => self.harness.push(sample),
            Event::DbSample { at_us, sample } => {
                self.live.set_queue_depth(sample.pending);
                let server = |k| sample.server.get(k).copied().unwrap_or(0);
                self.live
                    .set_stall(server("stalled_partitions"), server("stalled_for_ms"));
                self.bucket(at_us).depth = Some(sample.pending);
                self.db_samples.push((at_us, *sample));
            }
            Event::ClaimProbe {
                at_us,
                label,
                probe,
            } => self.claim_probes.push(ClaimProbeRecord {
                at_us,
                label,
                probe,
            }),
            Event::Analyzed {
                at_us,
                took_us,
                rows,
                error,
            } => self.analyzed.push(AnalyzedRecord {
                at_us,
                took_us,
                rows,
                error,
            }),
            Event::Fault(record) => self.faults.push(record),
            Event::WorkerHello {
                slot,
                library,
                settings,
                ..
            } => self.on_worker_hello(slot, library, settings),
            Event::TableProbe {
                at_us,
                label,
                stats,
            } => self.probes.push(TableProbe {
                at_us,
                label,
                stats,
            }),
            Event::ProducersStopped { at_us } => {
                self.clip_phases(at_us);
                self.live.set_producers_stopped();
            }
            _ => {}
        }
    }
}
