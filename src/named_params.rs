//! Named parameters in a design's statements (`:batch`, `:visibility_timeout`, `:id`,
//! `:backoff_base`, …), so a statement says what it takes instead of a position, and one
//! directory serves single and batch claims. The text is rewritten to the engine's
//! placeholders before it is prepared; string literals, quoted names, comments,
//! dollar-quoted bodies and `::` casts are left alone. Kept apart from both the scenario and
//! the backends, which both read it: the plan asks whether a claim recovers by timeout, an
//! engine rewrites and binds.

/// The names one statement may take: an enum per statement, so a bind site matches only
/// what its statement can hold.
pub trait Named: Copy + Eq + std::fmt::Debug + 'static {
    /// Every name, in the order messages list them.
    const ALL: &'static [Self];
    fn name(self) -> &'static str;
}

/// What claim.sql may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimParam {
    /// How many jobs one claim takes (`queue.claim_batch`).
    Batch,
    /// How long a claimed job stays invisible (`queue.visibility_timeout`).
    VisibilityTimeout,
}

impl Named for ClaimParam {
    const ALL: &'static [Self] = &[ClaimParam::Batch, ClaimParam::VisibilityTimeout];

    fn name(self) -> &'static str {
        match self {
            ClaimParam::Batch => "batch",
            ClaimParam::VisibilityTimeout => "visibility_timeout",
        }
    }
}

/// What fail.sql may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailParam {
    /// The failed job's id.
    Id,
    /// The failure's message.
    Error,
    /// `queue.backoff.base`.
    BackoffBase,
    /// `queue.backoff.factor`.
    BackoffFactor,
    /// `queue.backoff.cap`, NULL for no cap.
    BackoffCap,
    /// The share of the delay always waited: `queue.backoff.jitter` none 1, equal ½, full 0.
    BackoffJitter,
}

impl Named for FailParam {
    const ALL: &'static [Self] = &[
        FailParam::Id,
        FailParam::Error,
        FailParam::BackoffBase,
        FailParam::BackoffFactor,
        FailParam::BackoffCap,
        FailParam::BackoffJitter,
    ];

    fn name(self) -> &'static str {
        match self {
            FailParam::Id => "id",
            FailParam::Error => "error",
            FailParam::BackoffBase => "backoff_base",
            FailParam::BackoffFactor => "backoff_factor",
            FailParam::BackoffCap => "backoff_cap",
            FailParam::BackoffJitter => "backoff_jitter",
        }
    }
}

/// What MariaDB's mark_claimed.sql (the claim's second half: there is no
/// `UPDATE … RETURNING`) may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkParam {
    /// The claimed job's id; for batch claims, the claimed ids as a JSON array.
    Id,
    /// How long a claimed job stays invisible (`queue.visibility_timeout`).
    VisibilityTimeout,
}

impl Named for MarkParam {
    const ALL: &'static [Self] = &[MarkParam::Id, MarkParam::VisibilityTimeout];

    fn name(self) -> &'static str {
        match self {
            MarkParam::Id => "id",
            MarkParam::VisibilityTimeout => "visibility_timeout",
        }
    }
}

/// A statement's names, each bound at a fixed position (its place in the list, from `$1`),
/// which is the order the harness binds them in and the positional form docs/designs.md
/// lists: a statement may use names or positions, and any subset of either.
macro_rules! fixed_params {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($variant),+
        }

        impl Named for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];

            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }
    };
}

fixed_params! {
    /// What enqueue.sql takes.
    EnqueueParam { Type = "type", Payload = "payload", Priority = "priority", MaxRetries = "max_retries" }
}
fixed_params! {
    /// What prefill.sql takes (arrays, one element per job).
    PrefillParam { Types = "types", Payloads = "payloads", Priorities = "priorities", MaxRetries = "max_retries" }
}
fixed_params! {
    /// What complete.sql takes when it completes one job.
    CompleteParam { Id = "id" }
}
fixed_params! {
    /// What complete.sql takes when it completes a claimed batch.
    BatchCompleteParam { Ids = "ids" }
}
fixed_params! {
    /// What reap.sql and reap_counting.sql take: the threshold, and the back-off a rescued
    /// job may be given (`queue.backoff`, as fail.sql's).
    ReapParam {
        StaleAfter = "stale_after",
        BackoffBase = "backoff_base",
        BackoffFactor = "backoff_factor",
        BackoffCap = "backoff_cap",
        BackoffJitter = "backoff_jitter",
    }
}
fixed_params! {
    /// What job_status.sql and untracked.sql take.
    IdsParam { Ids = "ids" }
}
fixed_params! {
    /// What ledger_check.sql takes.
    LedgerParam { Ids = "ids", Expected = "expected" }
}
fixed_params! {
    /// What jobs_by_key.sql takes.
    KeysParam { Keys = "keys" }
}

/// Statements that take nothing (pending_count.sql, status_counts.sql, tick.sql), and, on
/// MariaDB, every statement but the claim's and the failure update's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoParam {}

impl Named for NoParam {
    const ALL: &'static [Self] = &[];

    fn name(self) -> &'static str {
        match self {}
    }
}

/// `:batch, :visibility_timeout`, for messages.
pub fn allowed<P: Named>() -> String {
    let names: Vec<String> = P::ALL.iter().map(|p| format!(":{}", p.name())).collect();
    names.join(", ")
}

/// Whether `sql` takes `param` (outside comments and strings); false when it does not
/// rewrite.
pub fn takes<P: Named>(sql: &str, param: P) -> bool {
    rewrite::<P>(sql, Placeholders::Numbered).is_ok_and(|r| r.binds.contains(&param))
}

/// How an engine writes a bound parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholders {
    /// `$1`, `$2`, …: one per name, reused where the name repeats (PostgreSQL).
    Numbered,
    /// `?`: one per occurrence, bound in order (MariaDB).
    Question,
    /// `$k` for the k-th name of the statement's list, whichever it uses (PostgreSQL's
    /// statements whose values the harness binds in a fixed order).
    Fixed,
}

/// A statement with its names replaced by placeholders, and what to bind to them, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten<P> {
    pub sql: String,
    pub binds: Vec<P>,
    /// The text had placeholders of its own (`$1`, `?`) besides any names.
    pub positional: bool,
}

/// Replaces each `:name` of `sql` by a placeholder; a name the statement does not take is
/// an error naming it and the allowed ones.
pub fn rewrite<P: Named>(sql: &str, style: Placeholders) -> Result<Rewritten<P>, String> {
    let mut out = Rewritten {
        sql: String::with_capacity(sql.len()),
        binds: Vec::new(),
        positional: false,
    };
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        let skip = match c {
            '\'' | '"' | '`' => quoted(rest, c),
            '-' if rest.starts_with("--") => rest.find('\n').unwrap_or(rest.len()),
            '/' if rest.starts_with("/*") => rest.find("*/").map_or(rest.len(), |i| i + 2),
            ':' if rest.starts_with("::") => 2,
            ':' => {
                let name = word(&rest[1..]);
                if name.is_empty() {
                    1
                } else {
                    let param = P::ALL.iter().find(|p| p.name() == name);
                    let param = *param.ok_or_else(|| unknown::<P>(name))?;
                    out.sql.push_str(&placeholder(&mut out.binds, param, style));
                    rest = &rest[1 + name.len()..];
                    continue;
                }
            }
            '$' => dollar(rest, &mut out.positional),
            '?' => {
                out.positional |= style == Placeholders::Question;
                1
            }
            _ => c.len_utf8(),
        };
        out.sql.push_str(&rest[..skip]);
        rest = &rest[skip..];
    }
    Ok(out)
}

fn unknown<P: Named>(name: &str) -> String {
    match P::ALL.is_empty() {
        true => format!(
            "takes a named parameter :{name}, but it is given none (on MariaDB only claim.sql ({}), mark_claimed.sql and fail.sql ({}) take names, the other statements the ? that docs/designs.md lists)",
            allowed::<ClaimParam>(),
            allowed::<FailParam>()
        ),
        false => format!(
            "takes an unknown parameter :{name}; its parameters are {}",
            allowed::<P>()
        ),
    }
}

fn placeholder<P: Named>(binds: &mut Vec<P>, param: P, style: Placeholders) -> String {
    match style {
        Placeholders::Question => {
            binds.push(param);
            "?".into()
        }
        Placeholders::Fixed => {
            if !binds.contains(&param) {
                binds.push(param);
            }
            let k = P::ALL.iter().position(|p| *p == param).unwrap_or(0) + 1;
            format!("${k}")
        }
        Placeholders::Numbered => {
            let n = match binds.iter().position(|p| *p == param) {
                Some(i) => i + 1,
                None => {
                    binds.push(param);
                    binds.len()
                }
            };
            format!("${n}")
        }
    }
}

/// The length of a quoted run starting at `rest` (doubled quotes stay inside).
fn quoted(rest: &str, quote: char) -> usize {
    let mut chars = rest.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            if chars.peek().map(|(_, n)| *n) == Some(quote) {
                chars.next();
                continue;
            }
            return i + 1;
        }
    }
    rest.len()
}

/// An identifier's characters at the start of `s`.
fn word(s: &str) -> &str {
    let end = s
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_alphanumeric() || *c == '_') || (*i == 0 && c.is_ascii_digit()))
        .map_or(s.len(), |(i, _)| i);
    &s[..end]
}

/// `$1` (a positional parameter) or a `$tag$ … $tag$` body, skipped whole.
fn dollar(rest: &str, positional: &mut bool) -> usize {
    let digits = rest[1..].chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        *positional = true;
        return 1 + digits;
    }
    let tag_len = word(&rest[1..]).len();
    if !rest[1 + tag_len..].starts_with('$') {
        return 1;
    }
    let tag = &rest[..tag_len + 2];
    match rest[tag.len()..].find(tag) {
        Some(i) => tag.len() + i + tag.len(),
        None => rest.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_numbered_placeholders_once_each() {
        let r = rewrite::<ClaimParam>(
            "SELECT :batch, now() + :visibility_timeout, :batch::int, 'a :b', \"x:y\" -- :c\n",
            Placeholders::Numbered,
        )
        .unwrap();
        assert_eq!(
            r.sql,
            "SELECT $1, now() + $2, $1::int, 'a :b', \"x:y\" -- :c\n"
        );
        assert_eq!(
            r.binds,
            vec![ClaimParam::Batch, ClaimParam::VisibilityTimeout]
        );
        assert!(!r.positional);
    }

    #[test]
    fn question_marks_repeat_per_occurrence() {
        let r = rewrite::<ClaimParam>(
            "LIMIT :batch /* :x */ OFFSET :batch",
            Placeholders::Question,
        )
        .unwrap();
        assert_eq!(r.sql, "LIMIT ? /* :x */ OFFSET ?");
        assert_eq!(r.binds, vec![ClaimParam::Batch, ClaimParam::Batch]);
    }

    #[test]
    fn positional_placeholders_and_dollar_bodies_are_seen_and_kept() {
        let r = rewrite::<ClaimParam>(
            "SELECT $1, $f$ :nope $f$, 'it''s :no'",
            Placeholders::Numbered,
        )
        .unwrap();
        assert_eq!(r.sql, "SELECT $1, $f$ :nope $f$, 'it''s :no'");
        assert!(r.binds.is_empty());
        assert!(r.positional);
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_allowed_ones() {
        let e = rewrite::<ClaimParam>("LIMIT :limit", Placeholders::Numbered).unwrap_err();
        assert!(
            e.contains(":limit") && e.contains(":batch, :visibility_timeout"),
            "{e}"
        );
    }

    #[test]
    fn a_name_of_another_statement_is_unknown_here() {
        let e = rewrite::<ClaimParam>("WHERE id = :id", Placeholders::Numbered).unwrap_err();
        assert!(
            e.contains(":id") && e.contains("its parameters are :batch"),
            "{e}"
        );
        let r = rewrite::<FailParam>("WHERE id = :id", Placeholders::Numbered).unwrap();
        assert_eq!(r.binds, vec![FailParam::Id]);
        let e = rewrite::<NoParam>("WHERE id = :id", Placeholders::Numbered).unwrap_err();
        assert!(e.contains("only claim.sql"), "{e}");
    }

    #[test]
    fn takes_looks_past_comments_and_strings() {
        let claim = "-- no :visibility_timeout here\nSELECT ':visibility_timeout'";
        assert!(!takes(claim, ClaimParam::VisibilityTimeout));
        assert!(takes(
            "SET vt = now() + :visibility_timeout",
            ClaimParam::VisibilityTimeout
        ));
    }
}
