//! Java's `java.text.SimpleDateFormat`, as Connect's `TimestampConverter` and `TimestampRouter`
//! use it: a pattern compiled once, then formatting and parsing in UTC (Connect sets UTC on its
//! formats) with the English names of Java's default `en` locale (`May`, `Wednesday`, `AM`, `AD`).
//!
//! The calendar is Java's default `GregorianCalendar`: Julian before 1582-10-15, Gregorian from
//! then on, years before 1 AD written as years of the BC era. Parsing is lenient, as Java's is:
//! `2024-02-30` is March 1st, `25:00` is 1 AM the next day, text after the pattern is ignored, and
//! a two-digit year (`yy`) is put in the century that starts 80 years before the format was made.
//! Fields that appear twice, or that say the same thing (`d` and `D`, `H` and `h`), are resolved as
//! `Calendar` resolves them: the field set last wins.
//!
//! The letters are Java's, but for the week-based ones (`Y`, `w`, `W`, `F`), whose meaning hangs
//! on a locale's first day of the week: a pattern with one of those, or with a letter Java does
//! not know, is refused when it is compiled, with the letter named.
//!
//! Where parsing differs from Java's: a time zone name is understood only if it is UTC's own
//! (`UTC`, `Coordinated Universal Time`) or `GMT` with an offset (`GMT+01:00`); other names
//! (`PST`, `Europe/Paris`) do not parse, where Java looks them up in its time zone database.
//! Digits are ASCII digits, where Java also takes other scripts' digits. Literal text must match
//! character for character, as in Java 17 (later Javas let any space match any space).

use std::time::{SystemTime, UNIX_EPOCH};

const MILLIS_PER_DAY: i64 = 86_400_000;
/// Java's fixed date (days counted so that 0001-01-01 Gregorian is day 1) of 1970-01-01.
const EPOCH_FIXED: i64 = 719_163;
/// The fixed date of 1582-10-15, the first day of the Gregorian calendar in Java's
/// `GregorianCalendar`; the days before it are Julian.
const CUTOVER_FIXED: i64 = 577_736;
/// The year of the cutover, in both calendars.
const CUTOVER_YEAR: i64 = 1582;
/// Java's fixed date of 0001-01-01 Julian.
const JULIAN_EPOCH: i64 = -1;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const SHORT_MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
/// By Java's `DAY_OF_WEEK` less one: Sunday first.
const WEEKDAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const SHORT_WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
/// By Java's `ERA`: BC is 0, AD is 1; what parsing takes, the short names first.
const ERAS: [(&str, i32); 4] = [("BC", 0), ("AD", 1), ("Before Christ", 0), ("Anno Domini", 1)];
const AM_PM: [&str; 2] = ["AM", "PM"];
/// UTC's names as Java writes them for `z` (short) and `zzzz` (long), and reads them, long
/// first.
const UTC_SHORT: &str = "UTC";
const UTC_LONG: &str = "Coordinated Universal Time";

/// What a pattern letter stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Letter {
    /// `G`
    Era,
    /// `y`: the year of the era.
    Year,
    /// `M`
    Month,
    /// `L`: the month as it stands alone (the same words in English).
    MonthStandalone,
    /// `d`
    DayOfMonth,
    /// `k`: the hour of the day, 1 to 24.
    HourOfDay1,
    /// `H`: the hour of the day, 0 to 23.
    HourOfDay0,
    /// `m`
    Minute,
    /// `s`
    Second,
    /// `S`: milliseconds (not a fraction: `S` writes 5 for 5 ms).
    Millisecond,
    /// `E`
    DayOfWeek,
    /// `D`
    DayOfYear,
    /// `a`
    AmPm,
    /// `h`: the hour of AM or PM, 1 to 12.
    Hour1,
    /// `K`: the hour of AM or PM, 0 to 11.
    Hour0,
    /// `z`
    ZoneName,
    /// `Z`: `+0000`.
    ZoneValue,
    /// `u`: the day of the week, Monday 1 to Sunday 7.
    IsoDayOfWeek,
    /// `X`: ISO 8601's `Z`, `+01`, `+0100` or `+01:00`.
    IsoZone,
}

impl Letter {
    fn of(c: char) -> Result<Letter, String> {
        Ok(match c {
            'G' => Letter::Era,
            'y' => Letter::Year,
            'M' => Letter::Month,
            'L' => Letter::MonthStandalone,
            'd' => Letter::DayOfMonth,
            'k' => Letter::HourOfDay1,
            'H' => Letter::HourOfDay0,
            'm' => Letter::Minute,
            's' => Letter::Second,
            'S' => Letter::Millisecond,
            'E' => Letter::DayOfWeek,
            'D' => Letter::DayOfYear,
            'a' => Letter::AmPm,
            'h' => Letter::Hour1,
            'K' => Letter::Hour0,
            'z' => Letter::ZoneName,
            'Z' => Letter::ZoneValue,
            'u' => Letter::IsoDayOfWeek,
            'X' => Letter::IsoZone,
            'Y' | 'w' | 'W' | 'F' => {
                let meaning = match c {
                    'Y' => "week year",
                    'w' => "week of the year",
                    'W' => "week of the month",
                    _ => "day of the week in the month",
                };
                return Err(format!(
                    "the pattern letter '{c}' ({meaning}) is not one Wharf supports, as its meaning depends on a \
                     locale's first day of the week; use the letters G y M L d E u D a H k K h m s S z Z X, and \
                     put literal text in single quotes"
                ));
            }
            _ => {
                return Err(format!(
                    "Illegal pattern character '{c}': a letter in a SimpleDateFormat pattern must be one of \
                     G y M L d E u D a H k K h m s S z Z X; put literal text in single quotes, e.g. 'T'"
                ))
            }
        })
    }

    /// Whether a field of this letter, right after a numeric field, makes that field read only
    /// as many digits as it has letters (so that `yyyyMMdd` reads `20240501`): Java's
    /// `shouldObeyCount`.
    fn is_numeric(self, count: usize) -> bool {
        match self {
            Letter::Month | Letter::MonthStandalone => count <= 2,
            Letter::Year
            | Letter::DayOfMonth
            | Letter::HourOfDay1
            | Letter::HourOfDay0
            | Letter::Minute
            | Letter::Second
            | Letter::Millisecond
            | Letter::DayOfYear
            | Letter::Hour1
            | Letter::Hour0
            | Letter::IsoDayOfWeek => true,
            Letter::Era | Letter::DayOfWeek | Letter::AmPm | Letter::ZoneName | Letter::ZoneValue | Letter::IsoZone => {
                false
            }
        }
    }
}

/// One piece of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// Literal text, written as it is and matched character for character.
    Text(String),
    /// A run of one pattern letter, and how many times it is repeated.
    Field(Letter, usize),
}

/// A compiled `SimpleDateFormat` pattern in UTC.
#[derive(Debug, Clone)]
pub(super) struct DateFormat {
    pattern: String,
    items: Vec<Item>,
    /// Where two-digit years start: 80 years before the format was made, in milliseconds since
    /// the epoch, and that instant's year.
    century_start: i64,
    century_start_year: i64,
}

impl DateFormat {
    /// Compiles a pattern as `new SimpleDateFormat(pattern)` does, or says what is wrong with it.
    pub(super) fn new(pattern: &str) -> Result<Self, String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
        Self::made_at(pattern, now)
    }

    /// The format as if made at `now` (milliseconds since the epoch), which places two-digit
    /// years.
    fn made_at(pattern: &str, now: i64) -> Result<Self, String> {
        let items = compile(pattern)?;
        let (century_start, century_start_year) = eighty_years_before(now);
        Ok(DateFormat { pattern: pattern.to_string(), items, century_start, century_start_year })
    }

    pub(super) fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The instant, in milliseconds since the epoch, written as the pattern says.
    pub(super) fn format(&self, millis: i64) -> String {
        let civil = Civil::of(millis);
        let mut out = String::with_capacity(self.pattern.len() + 8);
        for item in &self.items {
            match item {
                Item::Text(text) => out.push_str(text),
                Item::Field(letter, count) => civil.write(&mut out, *letter, *count),
            }
        }
        out
    }

    /// The instant the text stands for, as `DateFormat.parse(String)` reads it (text after what
    /// the pattern matches is ignored); none when the text does not match the pattern.
    pub(super) fn parse(&self, text: &str) -> Option<i64> {
        let chars: Vec<char> = text.chars().collect();
        let mut fields = Fields::default();
        let mut at = 0;
        for (i, item) in self.items.iter().enumerate() {
            match item {
                Item::Text(literal) => {
                    for c in literal.chars() {
                        if chars.get(at) != Some(&c) {
                            return None;
                        }
                        at += 1;
                    }
                }
                Item::Field(letter, count) => {
                    let obey_count = matches!(self.items.get(i + 1), Some(Item::Field(l, n)) if l.is_numeric(*n));
                    at = self.parse_field(&chars, at, *letter, *count, obey_count, &mut fields)?;
                }
            }
        }
        let millis = fields.instant(0);
        if fields.ambiguous_year && millis < self.century_start {
            return Some(fields.instant(100));
        }
        Some(millis)
    }

    /// Reads one field at `start`; where the text goes on after it.
    fn parse_field(
        &self,
        chars: &[char],
        start: usize,
        letter: Letter,
        count: usize,
        obey_count: bool,
        fields: &mut Fields,
    ) -> Option<usize> {
        // Spaces and tabs before a field are skipped, but the text must not end there.
        let mut at = start;
        loop {
            let c = *chars.get(at)?;
            if c != ' ' && c != '\t' {
                break;
            }
            at += 1;
        }
        let limit = match obey_count {
            true if start + count > chars.len() => return None,
            true => start + count,
            false => chars.len(),
        };
        let read_number = |at: usize| number(chars, at, limit);
        match letter {
            Letter::Year => {
                let (mut value, end) = read_number(at)?;
                let two_digits =
                    count <= 2 && end - at == 2 && chars[at].is_ascii_digit() && chars[at + 1].is_ascii_digit();
                if two_digits {
                    let ambiguous = (self.century_start_year % 100) as i32;
                    fields.ambiguous_year = value == ambiguous;
                    value += (self.century_start_year / 100 * 100) as i32 + if value < ambiguous { 100 } else { 0 };
                }
                fields.set(Slot::Year, value);
                Some(end)
            }
            Letter::Month | Letter::MonthStandalone if count <= 2 => {
                let (value, end) = read_number(at)?;
                fields.set(Slot::Month, value.wrapping_sub(1));
                Some(end)
            }
            Letter::Month | Letter::MonthStandalone => {
                let names = MONTHS.iter().chain(SHORT_MONTHS.iter()).enumerate().map(|(i, n)| (*n, (i % 12) as i32));
                let (value, end) = longest_match(chars, start, names)?;
                fields.set(Slot::Month, value);
                Some(end)
            }
            Letter::HourOfDay1 => {
                let (value, end) = read_number(at)?;
                fields.set(Slot::HourOfDay, if value == 24 { 0 } else { value });
                Some(end)
            }
            Letter::Hour1 => {
                let (value, end) = read_number(at)?;
                fields.set(Slot::Hour, if value == 12 { 0 } else { value });
                Some(end)
            }
            Letter::Era => {
                let (value, end) = longest_match(chars, start, ERAS.iter().copied())?;
                fields.set(Slot::Era, value);
                Some(end)
            }
            Letter::DayOfWeek => {
                let long = WEEKDAYS.iter().enumerate().map(|(i, n)| (*n, i as i32 + 1));
                let short = SHORT_WEEKDAYS.iter().enumerate().map(|(i, n)| (*n, i as i32 + 1));
                let (value, end) = longest_match(chars, start, long).or_else(|| longest_match(chars, start, short))?;
                fields.set(Slot::DayOfWeek, value);
                Some(end)
            }
            Letter::AmPm => {
                let (value, end) = longest_match(chars, start, AM_PM.iter().enumerate().map(|(i, n)| (*n, i as i32)))?;
                fields.set(Slot::AmPm, value);
                Some(end)
            }
            Letter::ZoneName | Letter::ZoneValue => {
                let sign = match chars[at] {
                    '+' => 1,
                    '-' => -1,
                    _ => 0,
                };
                if sign != 0 {
                    return numeric_zone(chars, at + 1, sign, 0, false, fields);
                }
                if matches!(chars[at], 'G' | 'g') && region_matches(chars, start, "GMT") {
                    let after = start + 3;
                    let sign = match chars.get(after) {
                        Some('+') => 1,
                        Some('-') => -1,
                        _ => 0,
                    };
                    if sign == 0 {
                        fields.set(Slot::ZoneOffset, 0);
                        fields.set(Slot::DstOffset, 0);
                        return Some(after);
                    }
                    return numeric_zone(chars, after + 1, sign, 0, true, fields);
                }
                // UTC's names say what the format's own zone says already: nothing to set.
                [UTC_LONG, UTC_SHORT].iter().find(|name| region_matches(chars, at, name)).map(|name| at + name.len())
            }
            Letter::IsoZone => {
                let sign = match chars[at] {
                    'Z' => {
                        fields.set(Slot::ZoneOffset, 0);
                        fields.set(Slot::DstOffset, 0);
                        return Some(at + 1);
                    }
                    '+' => 1,
                    '-' => -1,
                    _ => return None,
                };
                numeric_zone(chars, at + 1, sign, count, count == 3, fields)
            }
            Letter::DayOfMonth
            | Letter::HourOfDay0
            | Letter::Minute
            | Letter::Second
            | Letter::Millisecond
            | Letter::DayOfYear
            | Letter::Hour0
            | Letter::IsoDayOfWeek => {
                let (value, end) = read_number(at)?;
                let (slot, value) = match letter {
                    Letter::DayOfMonth => (Slot::DayOfMonth, value),
                    Letter::HourOfDay0 => (Slot::HourOfDay, value),
                    Letter::Minute => (Slot::Minute, value),
                    Letter::Second => (Slot::Second, value),
                    Letter::Millisecond => (Slot::Millisecond, value),
                    Letter::DayOfYear => (Slot::DayOfYear, value),
                    Letter::Hour0 => (Slot::Hour, value),
                    // ISO's Monday 1 … Sunday 7 as Java's Sunday 1 … Saturday 7; other numbers
                    // are kept, and roll over.
                    _ => (
                        Slot::DayOfWeek,
                        match value {
                            7 => 1,
                            1..=6 => value + 1,
                            _ => value,
                        },
                    ),
                };
                fields.set(slot, value);
                Some(end)
            }
        }
    }
}

/// The pieces of a pattern, or what is wrong with it, as `SimpleDateFormat.compile` finds them:
/// letters a–z and A–Z are fields, `'…'` is quoted text, `''` is a single quote (inside quotes
/// too), anything else is itself.
fn compile(pattern: &str) -> Result<Vec<Item>, String> {
    fn push_text(items: &mut Vec<Item>, c: char) {
        match items.last_mut() {
            Some(Item::Text(text)) => text.push(c),
            _ => items.push(Item::Text(c.to_string())),
        }
    }
    fn end_run(items: &mut Vec<Item>, run: &mut Option<(Letter, usize)>) -> Result<(), String> {
        if let Some((letter, count)) = run.take() {
            if letter == Letter::IsoZone && count >= 4 {
                return Err(format!(
                    "invalid ISO 8601 format: length={count}; X, XX and XXX are the ISO 8601 zone forms"
                ));
            }
            items.push(Item::Field(letter, count));
        }
        Ok(())
    }
    let mut items = Vec::new();
    let mut run: Option<(Letter, usize)> = None;
    let mut quoted: Option<String> = None;
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                end_run(&mut items, &mut run)?;
                match quoted.as_mut() {
                    Some(text) => text.push('\''),
                    None => push_text(&mut items, '\''),
                }
                continue;
            }
            match quoted.take() {
                None => {
                    end_run(&mut items, &mut run)?;
                    quoted = Some(String::new());
                }
                Some(text) => text.chars().for_each(|c| push_text(&mut items, c)),
            }
            continue;
        }
        if let Some(text) = quoted.as_mut() {
            text.push(c);
            continue;
        }
        if !c.is_ascii_alphabetic() {
            end_run(&mut items, &mut run)?;
            push_text(&mut items, c);
            continue;
        }
        let letter = Letter::of(c)?;
        match run.as_mut() {
            Some((l, count)) if *l == letter => *count += 1,
            _ => {
                end_run(&mut items, &mut run)?;
                run = Some((letter, 1));
            }
        }
    }
    if quoted.is_some() {
        return Err("Unterminated quote: a ' opens quoted text that no ' closes; write '' for a single quote".into());
    }
    end_run(&mut items, &mut run)?;
    Ok(items)
}

/// An instant's calendar fields in UTC, as Java's `GregorianCalendar` computes them.
struct Civil {
    /// The year counted from 1 AD, 0 being 1 BC (Java's "normalized" year).
    year: i64,
    month: i64,
    day: i64,
    day_of_year: i64,
    /// Sunday 1 … Saturday 7.
    weekday: i64,
    hour: i64,
    minute: i64,
    second: i64,
    millisecond: i64,
}

impl Civil {
    fn of(millis: i64) -> Civil {
        let days = millis.div_euclid(MILLIS_PER_DAY);
        let of_day = millis.rem_euclid(MILLIS_PER_DAY);
        let fixed = days + EPOCH_FIXED;
        let (year, month, day) =
            if fixed >= CUTOVER_FIXED { gregorian_from_fixed(fixed) } else { julian_from_fixed(fixed) };
        // The cutover year starts on its Julian January 1st, in both calendars.
        let jan1 = if fixed < CUTOVER_FIXED || year == CUTOVER_YEAR {
            julian_fixed(year, 1, 1)
        } else {
            gregorian_fixed(year, 1, 1)
        };
        Civil {
            year,
            month,
            day,
            day_of_year: fixed - jan1 + 1,
            weekday: fixed.rem_euclid(7) + 1,
            hour: of_day / 3_600_000,
            minute: of_day / 60_000 % 60,
            second: of_day / 1000 % 60,
            millisecond: of_day % 1000,
        }
    }

    fn write(&self, out: &mut String, letter: Letter, count: usize) {
        let bc = self.year <= 0;
        match letter {
            Letter::Era => out.push_str(if bc { "BC" } else { "AD" }),
            Letter::Year => {
                let year = if bc { 1 - self.year } else { self.year };
                match count {
                    2 => pad(out, year % 100, 2),
                    _ => pad(out, year, count),
                }
            }
            Letter::Month | Letter::MonthStandalone => match count {
                1 | 2 => pad(out, self.month, count),
                3 => out.push_str(SHORT_MONTHS[(self.month - 1) as usize]),
                _ => out.push_str(MONTHS[(self.month - 1) as usize]),
            },
            Letter::DayOfMonth => pad(out, self.day, count),
            Letter::HourOfDay1 => pad(out, if self.hour == 0 { 24 } else { self.hour }, count),
            Letter::HourOfDay0 => pad(out, self.hour, count),
            Letter::Minute => pad(out, self.minute, count),
            Letter::Second => pad(out, self.second, count),
            Letter::Millisecond => pad(out, self.millisecond, count),
            Letter::DayOfWeek => {
                let names = if count >= 4 { &WEEKDAYS } else { &SHORT_WEEKDAYS };
                out.push_str(names[(self.weekday - 1) as usize]);
            }
            Letter::DayOfYear => pad(out, self.day_of_year, count),
            Letter::AmPm => out.push_str(AM_PM[(self.hour / 12) as usize]),
            Letter::Hour1 => pad(out, if self.hour % 12 == 0 { 12 } else { self.hour % 12 }, count),
            Letter::Hour0 => pad(out, self.hour % 12, count),
            Letter::ZoneName => out.push_str(if count >= 4 { UTC_LONG } else { UTC_SHORT }),
            Letter::ZoneValue => out.push_str("+0000"),
            Letter::IsoDayOfWeek => pad(out, if self.weekday == 1 { 7 } else { self.weekday - 1 }, count),
            Letter::IsoZone => out.push('Z'),
        }
    }
}

/// A number that is not negative, with zeros before it to make at least `digits` digits.
fn pad(out: &mut String, value: i64, digits: usize) {
    let text = value.to_string();
    out.extend(std::iter::repeat_n('0', digits.saturating_sub(text.len())));
    out.push_str(&text);
}

/// The instant 80 years before `now`, where `SimpleDateFormat` starts the century of two-digit
/// years, and its year.
fn eighty_years_before(now: i64) -> (i64, i64) {
    let civil = Civil::of(now);
    let year = civil.year - 80;
    // Calendar.add keeps the day of the month where the month has it (February 29th becomes
    // the 28th).
    let month_length = gregorian_fixed(year, civil.month + 1, 1) - gregorian_fixed(year, civil.month, 1);
    let day = civil.day.min(month_length);
    let fixed = gregorian_fixed(year, civil.month, day);
    ((fixed - EPOCH_FIXED) * MILLIS_PER_DAY + now.rem_euclid(MILLIS_PER_DAY), year)
}

/// Java's fixed date of a Gregorian date; the month may be past 12 (it rolls into the next
/// year), the day any number.
fn gregorian_fixed(year: i64, month: i64, day: i64) -> i64 {
    let year = year + (month - 1).div_euclid(12);
    let month = (month - 1).rem_euclid(12) + 1;
    // Counted from March, so that the leap day ends a year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468 + EPOCH_FIXED
}

/// The Gregorian year, month and day of a fixed date.
fn gregorian_from_fixed(fixed: i64) -> (i64, i64, i64) {
    let z = fixed - EPOCH_FIXED + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

fn julian_leap(year: i64) -> bool {
    year.rem_euclid(4) == 0
}

/// Java's fixed date of a Julian date (month 1 to 12, the day any number).
fn julian_fixed(year: i64, month: i64, day: i64) -> i64 {
    let before_month = (367 * month - 362).div_euclid(12);
    let leap_correction = match month {
        1 | 2 => 0,
        _ if julian_leap(year) => 1,
        _ => 2,
    };
    JULIAN_EPOCH - 1 + 365 * (year - 1) + (year - 1).div_euclid(4) + before_month - leap_correction + day
}

/// The Julian year, month and day of a fixed date.
fn julian_from_fixed(fixed: i64) -> (i64, i64, i64) {
    let year = (4 * (fixed - JULIAN_EPOCH) + 1464).div_euclid(1461);
    let mut before = fixed - julian_fixed(year, 1, 1);
    if fixed >= julian_fixed(year, 3, 1) {
        before += if julian_leap(year) { 1 } else { 2 };
    }
    let month = (12 * before + 373).div_euclid(367);
    let day = fixed - julian_fixed(year, month, 1) + 1;
    (year, month, day)
}

/// The calendar fields a parse sets, each with when it was set (Java's stamps: 0 is never).
#[derive(Debug, Default)]
struct Fields {
    next_stamp: u32,
    slots: [(u32, i32); SLOTS],
    /// A two-digit year that may belong to the century's first or last year.
    ambiguous_year: bool,
}

const SLOTS: usize = 14;

#[derive(Debug, Clone, Copy)]
enum Slot {
    Era,
    Year,
    Month,
    DayOfMonth,
    DayOfYear,
    DayOfWeek,
    AmPm,
    Hour,
    HourOfDay,
    Minute,
    Second,
    Millisecond,
    ZoneOffset,
    DstOffset,
}

/// How the day is found within the year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DayBy {
    /// The month and the day of the month (the first of the month when no day was read).
    MonthDay,
    /// The month and the first of its days that is this day of the week.
    MonthWeekday,
    DayOfYear,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Calendar {
    Julian,
    Gregorian,
}

impl Fields {
    fn set(&mut self, slot: Slot, value: i32) {
        self.next_stamp += 1;
        self.slots[slot as usize] = (self.next_stamp, value);
    }

    fn stamp(&self, slot: Slot) -> u32 {
        self.slots[slot as usize].0
    }

    /// The field's value; 0 when it was not set, as a cleared `Calendar` has it.
    fn value(&self, slot: Slot) -> i64 {
        i64::from(self.slots[slot as usize].1)
    }

    /// The instant the fields name, as `GregorianCalendar.computeTime` finds it with lenient
    /// fields; `more_years` is added to the year (for a two-digit year in the next century).
    fn instant(&self, more_years: i32) -> i64 {
        // Java's year is an int, and wraps as one.
        let mut year = match self.stamp(Slot::Year) {
            0 => 1970,
            _ => self.slots[Slot::Year as usize].1.wrapping_add(more_years),
        };
        if self.stamp(Slot::Era) != 0 && self.value(Slot::Era) == 0 {
            year = 1i32.wrapping_sub(year);
        }

        // The hour: of the day, or of AM/PM, whichever was set last.
        let hour_of_day = self.stamp(Slot::HourOfDay);
        let half_day = both(self.stamp(Slot::Hour), self.stamp(Slot::AmPm));
        let mut best = hour_of_day.max(half_day);
        if best == 0 {
            best = self.stamp(Slot::Hour).max(self.stamp(Slot::AmPm));
        }
        let hours = if best != 0 && best == hour_of_day {
            self.value(Slot::HourOfDay)
        } else {
            self.value(Slot::Hour) + 12 * self.value(Slot::AmPm)
        };
        let time = ((hours * 60 + self.value(Slot::Minute)) * 60 + self.value(Slot::Second)) * 1000
            + self.value(Slot::Millisecond);
        let days_of_time = time.div_euclid(MILLIS_PER_DAY);
        let time = time.rem_euclid(MILLIS_PER_DAY);

        // The day: by the day of the month or of the year, whichever was set last; by the day of
        // the week when neither was.
        let mut by_month_day = self.stamp(Slot::DayOfMonth);
        let mut by_weekday = 0;
        let mut best = by_month_day.max(self.stamp(Slot::DayOfYear));
        if best == 0 {
            by_weekday = self.stamp(Slot::DayOfWeek);
            best = by_weekday;
            if best == 0 {
                best = self.stamp(Slot::Month);
                by_month_day = best;
            }
        }
        let day_by = if best == by_month_day {
            DayBy::MonthDay
        } else if best == by_weekday {
            DayBy::MonthWeekday
        } else {
            DayBy::DayOfYear
        };

        let in_calendar = |calendar| days_of_time + self.fixed_date(calendar, year, day_by);
        let cutover_year = CUTOVER_YEAR as i32;
        let fixed = if year >= cutover_year && !(year == cutover_year && day_by == DayBy::DayOfYear) {
            let gregorian = in_calendar(Calendar::Gregorian);
            if gregorian >= CUTOVER_FIXED {
                gregorian
            } else {
                // A Gregorian date before the cutover does not exist: Java takes the Julian one.
                in_calendar(Calendar::Julian)
            }
        } else {
            in_calendar(Calendar::Julian)
        };
        let offset = self.value(Slot::ZoneOffset) + self.value(Slot::DstOffset);
        (fixed - EPOCH_FIXED).wrapping_mul(MILLIS_PER_DAY).wrapping_add(time).wrapping_sub(offset)
    }

    /// The fixed date of the day the fields name in one calendar (Java's
    /// `GregorianCalendar.getFixedDate`).
    fn fixed_date(&self, calendar: Calendar, year: i32, day_by: DayBy) -> i64 {
        let fixed = |year: i64, month: i64, day: i64| match calendar {
            Calendar::Julian => julian_fixed(year, month, day),
            Calendar::Gregorian => gregorian_fixed(year, month, day),
        };
        if day_by == DayBy::DayOfYear {
            let mut first = fixed(i64::from(year), 1, 1);
            if i64::from(year) == CUTOVER_YEAR && calendar == Calendar::Gregorian && first < CUTOVER_FIXED {
                first = CUTOVER_FIXED;
            }
            return first + self.value(Slot::DayOfYear) - 1;
        }
        let month = self.slots[Slot::Month as usize].1;
        let year = year.wrapping_add(month.div_euclid(12));
        let first = fixed(i64::from(year), i64::from(month.rem_euclid(12)) + 1, 1);
        match day_by {
            DayBy::MonthWeekday => on_or_before(first + 6, self.value(Slot::DayOfWeek)),
            _ if self.stamp(Slot::DayOfMonth) != 0 => first + self.value(Slot::DayOfMonth) - 1,
            _ => first,
        }
    }
}

/// Java's aggregate of two stamps: unset when either is.
fn both(a: u32, b: u32) -> u32 {
    if a == 0 || b == 0 {
        0
    } else {
        a.max(b)
    }
}

/// The last day on or before `fixed` that is this day of the week (Sunday 1 … Saturday 7, or
/// a number out of that range, which Java takes modulo 7).
fn on_or_before(fixed: i64, weekday: i64) -> i64 {
    fixed - (fixed - (weekday - 1)).rem_euclid(7)
}

/// Whether `name` is at `at` in the text, without regard to case (Java's
/// `regionMatches(true, …)`).
fn region_matches(chars: &[char], at: usize, name: &str) -> bool {
    let mut i = at;
    for expected in name.chars() {
        match chars.get(i) {
            Some(c) if same_ignoring_case(*c, expected) => i += 1,
            _ => return false,
        }
    }
    true
}

fn same_ignoring_case(a: char, b: char) -> bool {
    fn upper(c: char) -> char {
        let mut up = c.to_uppercase();
        match (up.next(), up.next()) {
            (Some(u), None) => u,
            _ => c,
        }
    }
    fn lower(c: char) -> char {
        let mut low = c.to_lowercase();
        match (low.next(), low.next()) {
            (Some(l), None) => l,
            _ => c,
        }
    }
    a == b || upper(a) == upper(b) || lower(upper(a)) == lower(upper(b))
}

/// The longest of the names at `at` (without regard to case), with its value, and where the
/// text goes on after it.
fn longest_match<'a>(chars: &[char], at: usize, names: impl Iterator<Item = (&'a str, i32)>) -> Option<(i32, usize)> {
    let mut best: Option<(i32, usize)> = None;
    for (name, value) in names {
        let length = name.chars().count();
        if best.is_none_or(|(_, best_length)| length > best_length) && region_matches(chars, at, name) {
            best = Some((value, length));
        }
    }
    best.map(|(value, length)| (value, at + length))
}

/// A time zone offset after its sign, as `SimpleDateFormat.subParseNumericZone` reads it:
/// `hh` and `mm`, with a colon between them when `colon`; only `hh` when `count` is 1; with
/// `count` 0 and a colon, the hour may be one digit. Sets the zone fields.
fn numeric_zone(chars: &[char], at: usize, sign: i64, count: usize, colon: bool, fields: &mut Fields) -> Option<usize> {
    let digit = |c: char| c.to_digit(10).map(i64::from);
    let mut i = at;
    let mut next = || {
        let c = chars.get(i).copied();
        i += 1;
        c
    };
    let mut hours = digit(next()?)?;
    let second = next()?;
    let mut one_digit_hour = false;
    match digit(second) {
        Some(d) => hours = hours * 10 + d,
        None if count > 0 || !colon => return None,
        None => one_digit_hour = true,
    }
    if hours > 23 {
        return None;
    }
    let mut minutes = 0;
    if count != 1 {
        let mut c = if one_digit_hour { second } else { next()? };
        if colon {
            if c != ':' {
                return None;
            }
            c = next()?;
        }
        minutes = digit(c)?;
        minutes = minutes * 10 + digit(next()?)?;
        if minutes > 59 {
            return None;
        }
    }
    let end = i;
    fields.set(Slot::ZoneOffset, ((hours * 60 + minutes) * 60_000 * sign) as i32);
    fields.set(Slot::DstOffset, 0);
    Some(end)
}

/// An integer at `at`, read no further than `limit`, as Java's integer `DecimalFormat` reads it
/// for `SimpleDateFormat`: an optional `-`, digits, and an optional exponent (`E`, an optional
/// `-`, digits); a fraction is not read. `NaN` reads as 0, `∞` as the largest int. The value is
/// Java's `Number.intValue()` of what was read: a whole number that fits in a long keeps its low
/// 32 bits, anything else is rounded toward zero and clamped.
fn number(chars: &[char], at: usize, limit: usize) -> Option<(i32, usize)> {
    let char_at = |i: usize| if i < limit { chars.get(i).copied() } else { None };
    if (0..3).all(|k| char_at(at + k) == "NaN".chars().nth(k)) {
        return Some((0, at + 3));
    }
    let mut i = at;
    let negative = char_at(i) == Some('-');
    if negative {
        i += 1;
    }
    if char_at(i) == Some('∞') {
        return Some((if negative { i32::MIN } else { i32::MAX }, i + 1));
    }
    // The significant digits (without leading zeros) and how many of them are whole.
    let mut digits: Vec<u8> = Vec::new();
    let mut seen = false;
    while let Some(c) = char_at(i).filter(char::is_ascii_digit) {
        seen = true;
        if !(digits.is_empty() && c == '0') {
            digits.push(c as u8 - b'0');
        }
        i += 1;
    }
    if !seen {
        return None;
    }
    let mut whole = digits.len() as i64;
    if char_at(i) == Some('E') {
        let mut j = i + 1;
        let exponent_negative = char_at(j) == Some('-');
        if exponent_negative {
            j += 1;
        }
        let mut exponent: Option<i128> = None;
        while let Some(d) = char_at(j).and_then(|c| c.to_digit(10)) {
            exponent = Some(exponent.unwrap_or(0).saturating_mul(10).saturating_add(i128::from(d)));
            j += 1;
        }
        let exponent = exponent.map(|e| if exponent_negative { -e } else { e });
        if let Some(e) = exponent.filter(|e| i64::try_from(*e).is_ok()) {
            whole += i64::from(e as i64 as i32);
            i = j;
        }
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    Some((int_value(negative, &digits, whole), i))
}

/// `Number.intValue()` of the number `0.digits × 10^whole`, negated when `negative`, as Java's
/// `DecimalFormat` returns it (a `Long` when it is whole and fits, a `Double` otherwise).
fn int_value(negative: bool, digits: &[u8], whole: i64) -> i32 {
    if digits.is_empty() {
        return 0;
    }
    let count = digits.len() as i64;
    if whole >= count && whole <= 19 {
        let mut magnitude: u128 = 0;
        for d in digits {
            magnitude = magnitude * 10 + u128::from(*d);
        }
        for _ in count..whole {
            magnitude *= 10;
        }
        let limit = if negative { 1u128 << 63 } else { (1u128 << 63) - 1 };
        if magnitude <= limit {
            let long = if negative { (magnitude as i128).wrapping_neg() as i64 } else { magnitude as i64 };
            return long as i32;
        }
    }
    let mut text = String::with_capacity(digits.len() + 24);
    if negative {
        text.push('-');
    }
    text.push_str("0.");
    text.extend(digits.iter().map(|d| char::from(b'0' + d)));
    text.push('e');
    text.push_str(&whole.to_string());
    text.parse::<f64>().map(|x| x as i32).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-02T01:02:00Z: two-digit years then start in 1946.
    const NOW: i64 = 1_796_173_320_000;

    fn format(pattern: &str, millis: i64) -> String {
        DateFormat::made_at(pattern, NOW).unwrap().format(millis)
    }

    fn parse(pattern: &str, text: &str) -> Option<i64> {
        DateFormat::made_at(pattern, NOW).unwrap().parse(text)
    }

    #[test]
    fn formats_every_supported_letter_as_java_does() {
        let pattern = "G y yy yyy yyyy M MM MMM MMMM L d dd H HH h k K m s S SSS a E EEEE u D DDD z zzzz Z X XXX";
        assert_eq!(
            format(pattern, 1_714_566_600_123),
            "AD 2024 24 2024 2024 5 05 May May 5 1 01 12 12 12 12 0 30 0 123 123 PM Wed Wednesday 3 122 122 UTC \
             Coordinated Universal Time +0000 Z Z"
        );
        assert_eq!(format("h:mm a, k", 0), "12:00 AM, 24");
        assert_eq!(format("yyyyMMdd", 253_402_300_800_000), "100000101");
        assert_eq!(format("S SS", 5), "5 05");
    }

    #[test]
    fn quotes_make_literal_text_and_two_make_a_quote() {
        assert_eq!(format("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", 1_714_566_600_123), "2024-05-01T12:30:00.123Z");
        assert_eq!(format("h 'o''clock' ''a''", 36_000_000), "10 o'clock 'AM'");
        assert_eq!(format("é-dd", 0), "é-01");
    }

    #[test]
    fn dates_before_the_gregorian_cutover_are_julian_and_bc_years_count_back() {
        assert_eq!(format("yyyy-MM-dd D", -12_219_292_800_000), "1582-10-15 278");
        assert_eq!(format("yyyy-MM-dd D", -12_219_292_800_001), "1582-10-04 277");
        assert_eq!(format("G yyyy-MM-dd EEE", -62_135_596_800_000), "AD 0001-01-03 Mon");
        assert_eq!(format("G yyyy-MM-dd", -62_198_841_600_000), "BC 0002-01-02");
        for millis in [-12_219_292_800_001, -62_198_841_600_000, -1, 0, 1_709_251_199_999] {
            let pattern = "G yyyy-MM-dd HH:mm:ss.SSS";
            assert_eq!(parse(pattern, &format(pattern, millis)), Some(millis), "{millis}");
        }
    }

    #[test]
    fn parsing_reads_fields_leniently_and_ignores_what_follows() {
        assert_eq!(parse("yyyy-MM-dd", "2024-02-30"), Some(1_709_251_200_000), "March 1st");
        assert_eq!(parse("yyyy-MM-dd", "2024-00-00"), Some(1_701_302_400_000), "November 30th 2023");
        assert_eq!(parse("HH:mm", "25:61"), Some(93_660_000));
        assert_eq!(parse("yyyy-MM-dd", "2024-05-01trailing"), Some(1_714_521_600_000));
        assert_eq!(parse("yyyy-MM-dd", "2024-5-1"), Some(1_714_521_600_000));
        assert_eq!(parse("yyyy-MM-dd", "2024-05- 1"), Some(1_714_521_600_000), "spaces before a number");
        assert_eq!(parse("yyyy-MM-dd", "2024-05"), None);
        assert_eq!(parse("yyyy", ""), None);
        assert_eq!(parse("HH:mm:ss", "-1:00:00"), Some(-3_600_000));
    }

    #[test]
    fn adjacent_numbers_read_as_many_digits_as_their_letters() {
        assert_eq!(parse("yyyyMMddHHmmss", "20240501123456"), Some(1_714_566_896_000));
        assert_eq!(parse("yyyyMMdd", "2024051"), Some(1_714_521_600_000));
        assert_eq!(parse("yyyyMMdd", "2024 0501"), Some(1_744_588_800_000));
    }

    #[test]
    fn two_digit_years_fall_in_the_century_that_started_eighty_years_ago() {
        assert_eq!(parse("yy", "24"), Some(1_704_067_200_000), "2024");
        assert_eq!(parse("yy", "45"), Some(2_366_841_600_000), "2045");
        assert_eq!(parse("yy", "46"), Some(2_398_377_600_000), "2046: 1946-01-01 is before the start");
        assert_eq!(parse("yy", "47"), Some(-725_846_400_000), "1947");
        assert_eq!(parse("yy", "2024"), Some(1_704_067_200_000), "more digits are the year itself");
        assert_eq!(parse("yyyy", "24"), Some(-61_410_009_600_000), "24 AD");
    }

    #[test]
    fn names_parse_without_regard_to_case_long_or_short() {
        assert_eq!(parse("MMM yyyy", "sep 2024"), Some(1_725_148_800_000));
        assert_eq!(parse("MMM yyyy", "September 2024"), Some(1_725_148_800_000));
        assert_eq!(parse("MMM yyyy", "Sept 2024"), None);
        assert_eq!(parse("hh a", "10 pm"), Some(79_200_000));
        assert_eq!(parse("hh a", "12 AM"), Some(0));
        assert_eq!(parse("G yyyy", "Before Christ 0001"), Some(-62_167_392_000_000));
        assert_eq!(parse("EEE yyyy", "Wed 2024"), Some(1_704_240_000_000), "the first Wednesday");
        assert_eq!(parse("yyyy-MM-dd EEE", "2024-05-01 Mon"), Some(1_714_521_600_000), "the day wins");
        assert_eq!(parse("yyyy MM dd DDD", "2024 01 01 100"), Some(1_712_620_800_000), "the last set wins");
        assert_eq!(parse("yyyy DDD MM dd", "2024 100 01 01"), Some(1_704_067_200_000));
    }

    #[test]
    fn zones_parse_as_offsets_utc_or_gmt() {
        let base = "yyyy-MM-dd HH:mm:ss ";
        let noon = Some(1_714_564_800_000);
        let eleven = Some(1_714_561_200_000);
        assert_eq!(parse(&format!("{base}z"), "2024-05-01 12:00:00 UTC"), noon);
        assert_eq!(parse(&format!("{base}z"), "2024-05-01 12:00:00 utc"), noon);
        assert_eq!(parse(&format!("{base}z"), "2024-05-01 12:00:00 GMT"), noon);
        assert_eq!(parse(&format!("{base}z"), "2024-05-01 12:00:00 GMT+1:00"), eleven);
        assert_eq!(parse(&format!("{base}z"), "2024-05-01 12:00:00 GMT+1"), None);
        assert_eq!(parse(&format!("{base}Z"), "2024-05-01 12:00:00 +0100"), eleven);
        assert_eq!(parse(&format!("{base}Z"), "2024-05-01 12:00:00 +01:00"), None);
        assert_eq!(parse(&format!("{base}X"), "2024-05-01 12:00:00 Z"), noon);
        assert_eq!(parse(&format!("{base}X"), "2024-05-01 12:00:00 +0130"), eleven, "X reads hours only");
        assert_eq!(parse(&format!("{base}XXX"), "2024-05-01 12:00:00 +01:30"), Some(1_714_559_400_000));
        assert_eq!(parse(&format!("{base}z"), "2024-05-01 12:00:00 PST"), None, "no time zone database");
    }

    #[test]
    fn numbers_read_as_javas_decimal_format_reads_them() {
        assert_eq!(parse("yyyy", "2024E1"), Some(576_545_472_000_000), "an exponent");
        assert_eq!(parse("yyyy", "12e3"), Some(-61_788_700_800_000), "e is not an exponent");
        assert_eq!(parse("yyyy", "1.5"), Some(-62_135_769_600_000), "no fraction");
        assert_eq!(parse("yyyy", "+5"), None);
        assert_eq!(parse("yyyy", "4294967297"), Some(-62_135_769_600_000), "a long's low 32 bits");
        assert_eq!(parse("yyyy", "NaN"), Some(-62_167_392_000_000));
        assert_eq!(parse("yyyy", "99999999999999999999"), parse("yyyy", "∞"));
    }

    #[test]
    fn patterns_with_letters_wharf_does_not_support_are_refused_by_letter() {
        for (pattern, says) in [
            ("yyyy-ww", "'w'"),
            ("YYYY", "'Y'"),
            ("yyyy-MM-dd x", "Illegal pattern character 'x'"),
            ("'T", "Unterminated quote"),
            ("XXXX", "length=4"),
        ] {
            let problem = DateFormat::new(pattern).unwrap_err();
            assert!(problem.contains(says), "{pattern}: {problem}");
        }
    }
}
