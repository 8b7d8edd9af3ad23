//! `updated` of a chapter: its mtime as JavaScript's `toISOString()`
//! writes it.

/// `Date.prototype.toISOString()` of a file's mtime as Node's `stat` gives
/// it: milliseconds, truncated toward zero, UTC.
pub fn iso_millis(secs: i64, nanos: i64) -> String {
    let total_ns = i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    let ms = total_ns / 1_000_000; // truncates toward zero, as TimeClip does
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days as i64);
    let (h, min, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else if y < 0 {
        format!("-{:06}", -y)
    } else {
        format!("+{y:06}")
    };
    format!("{year}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// The proleptic Gregorian date of a day count from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `updated` of a chapter whose metadata is `meta`.
pub fn updated_of(meta: &crate::backing::Meta) -> String {
    iso_millis(meta.mtime.0, meta.mtime.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_are_utc_with_truncated_milliseconds() {
        assert_eq!(iso_millis(1767323045, 0), "2026-01-02T03:04:05.000Z");
        assert_eq!(
            iso_millis(1767323045, 999_999_999),
            "2026-01-02T03:04:05.999Z"
        );
        assert_eq!(iso_millis(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_millis(951_782_400, 0), "2000-02-29T00:00:00.000Z");
        // Before the epoch, toward zero: -0.5 s is 23:59:59.500.
        assert_eq!(iso_millis(-1, 500_000_000), "1969-12-31T23:59:59.500Z");
        assert_eq!(iso_millis(-1, 999_999), "1969-12-31T23:59:59.001Z");
        assert_eq!(
            iso_millis(253_402_300_800, 0),
            "+010000-01-01T00:00:00.000Z"
        );
    }
}
