//! Calendar dates from Unix time, without a clock: the application formats the batch's agreed
//! time with them, and the front end its `Date` header.

/// `(year, month 1..=12, day 1..=31)` of the day `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, valid for every `i64` day the callers can produce).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Agreed time (microseconds since the Unix epoch) as `2026-11-26 05:30:00 UTC`.
pub fn format_agreed_time(micros: u64) -> String {
    let secs = (micros / 1_000_000) as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// Seconds since the Unix epoch as an HTTP date (RFC 9110 IMF-fixdate):
/// `Thu, 26 Nov 2026 05:30:00 GMT`.
pub fn format_http_date(unix_secs: u64) -> String {
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = unix_secs as i64;
    let days = secs.div_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let s = secs.rem_euclid(86_400);
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(format_agreed_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        // 2000-02-29 12:34:56 UTC, a leap day.
        assert_eq!(
            format_agreed_time(951_827_696 * 1_000_000 + 999_999),
            "2000-02-29 12:34:56 UTC"
        );
        assert_eq!(
            format_http_date(1_795_671_000),
            "Thu, 26 Nov 2026 05:30:00 GMT"
        );
        // The far future formats without overflow.
        assert!(format_agreed_time(u64::MAX).ends_with(" UTC"));
        assert!(format_http_date(u64::MAX / 1_000_000).ends_with(" GMT"));
    }
}
