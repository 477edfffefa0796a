//! Named parameters in a design's claim (`:batch`, `:visibility_timeout`), so a statement
//! says what it takes instead of a position, and one directory serves single and batch
//! claims. The text is rewritten to the engine's placeholders before it is prepared; string
//! literals, quoted names, comments, dollar-quoted bodies and `::` casts are left alone.

/// A value the harness binds into a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimParam {
    /// How many jobs one claim takes (`queue.claim_batch`).
    Batch,
    /// How long a claimed job stays invisible (`queue.visibility_timeout`).
    VisibilityTimeout,
}

impl ClaimParam {
    const ALL: [ClaimParam; 2] = [ClaimParam::Batch, ClaimParam::VisibilityTimeout];

    pub fn name(self) -> &'static str {
        match self {
            ClaimParam::Batch => "batch",
            ClaimParam::VisibilityTimeout => "visibility_timeout",
        }
    }

    fn parse(name: &str) -> Option<ClaimParam> {
        ClaimParam::ALL.into_iter().find(|p| p.name() == name)
    }

    /// `:batch, :visibility_timeout`, for messages.
    pub fn allowed() -> String {
        let names: Vec<String> = ClaimParam::ALL
            .iter()
            .map(|p| format!(":{}", p.name()))
            .collect();
        names.join(", ")
    }
}

/// How an engine writes a bound parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholders {
    /// `$1`, `$2`, …: one per name, reused where the name repeats (PostgreSQL).
    Numbered,
    /// `?`: one per occurrence, bound in order (MariaDB).
    Question,
}

/// A statement with its names replaced by placeholders, and what to bind to them, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub sql: String,
    pub binds: Vec<ClaimParam>,
    /// The text had placeholders of its own (`$1`, `?`) besides any names.
    pub positional: bool,
}

/// Replaces each `:name` of `sql` by a placeholder; an unknown name is an error naming it
/// and the allowed ones.
pub fn rewrite(sql: &str, style: Placeholders) -> Result<Rewritten, String> {
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
                    let param = ClaimParam::parse(name).ok_or_else(|| {
                        format!(
                            "takes an unknown parameter :{name}; the claim's parameters are {}",
                            ClaimParam::allowed()
                        )
                    })?;
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

fn placeholder(binds: &mut Vec<ClaimParam>, param: ClaimParam, style: Placeholders) -> String {
    match style {
        Placeholders::Question => {
            binds.push(param);
            "?".into()
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
        let r = rewrite(
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
        let r = rewrite(
            "LIMIT :batch /* :x */ OFFSET :batch",
            Placeholders::Question,
        )
        .unwrap();
        assert_eq!(r.sql, "LIMIT ? /* :x */ OFFSET ?");
        assert_eq!(r.binds, vec![ClaimParam::Batch, ClaimParam::Batch]);
    }

    #[test]
    fn positional_placeholders_and_dollar_bodies_are_seen_and_kept() {
        let r = rewrite(
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
        let e = rewrite("LIMIT :limit", Placeholders::Numbered).unwrap_err();
        assert!(
            e.contains(":limit") && e.contains(":batch, :visibility_timeout"),
            "{e}"
        );
    }
}
