//! IEC size parsing (`4K`, `1M`, `2MiB`, `1.5G`) and formatting (`1.5 MiB`).

/// Binary unit names, index = power of 1024.
const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// Error from [`parse_size`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("empty size")]
    Empty,
    #[error("invalid number in size {0:?}")]
    BadNumber(String),
    #[error("unknown unit suffix {0:?} (use B, K/KiB, M/MiB, G/GiB, T/TiB, P/PiB or E/EiB)")]
    BadUnit(String),
    #[error("size {0:?} is too large")]
    TooLarge(String),
}

/// Parse a non-negative byte count: a plain integer, or a number (possibly
/// with a fraction) followed by a binary unit suffix. Suffixes are
/// case-insensitive and always powers of 1024: `K`, `Ki`, `KiB` all mean
/// 1024; likewise M, G, T, P, E. `B` means bytes.
pub fn parse_size(s: &str) -> Result<i64, SizeError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(SizeError::Empty);
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() || num == "." {
        return Err(SizeError::BadNumber(s.to_string()));
    }
    let unit_l = unit.trim().to_ascii_lowercase();
    let power = match unit_l.as_str() {
        "" | "b" => 0,
        "k" | "ki" | "kib" => 1,
        "m" | "mi" | "mib" => 2,
        "g" | "gi" | "gib" => 3,
        "t" | "ti" | "tib" => 4,
        "p" | "pi" | "pib" => 5,
        "e" | "ei" | "eib" => 6,
        _ => return Err(SizeError::BadUnit(unit.trim().to_string())),
    };
    let mult: i128 = 1i128 << (10 * power);
    let value: i128 = if let Some((int, frac)) = num.split_once('.') {
        if frac.contains('.') {
            return Err(SizeError::BadNumber(s.to_string()));
        }
        // Exact decimal arithmetic: int.frac * mult, rounded to nearest.
        let frac = &frac[..frac.len().min(18)];
        let int_v: i128 = if int.is_empty() {
            0
        } else {
            int.parse()
                .map_err(|_| SizeError::TooLarge(s.to_string()))?
        };
        let frac_v: i128 = if frac.is_empty() {
            0
        } else {
            frac.parse()
                .map_err(|_| SizeError::BadNumber(s.to_string()))?
        };
        let scale = 10i128.pow(frac.len() as u32);
        int_v
            .checked_mul(mult)
            .map(|a| a + (frac_v * mult + scale / 2) / scale)
            .ok_or_else(|| SizeError::TooLarge(s.to_string()))?
    } else {
        num.parse::<i128>()
            .ok()
            .and_then(|n| n.checked_mul(mult))
            .ok_or_else(|| SizeError::TooLarge(s.to_string()))?
    };
    i64::try_from(value).map_err(|_| SizeError::TooLarge(s.to_string()))
}

/// Format a byte count with binary (IEC) units: `512 B`, `224.0 KiB`,
/// `1.5 MiB`, `-4.0 KiB`.
pub fn format_iec(bytes: i64) -> String {
    let neg = bytes < 0;
    let abs = bytes.unsigned_abs();
    if abs < 1024 {
        return format!("{bytes} B");
    }
    let mut power = 0;
    let mut div = 1u128;
    while power + 1 < UNITS.len() && (abs as u128) >= div * 1024 {
        power += 1;
        div *= 1024;
    }
    // Round to one decimal place; bump to the next unit if it rounds to 1024.
    let mut tenths = ((abs as u128) * 10 + div / 2) / div;
    if tenths >= 10240 && power + 1 < UNITS.len() {
        power += 1;
        div *= 1024;
        tenths = ((abs as u128) * 10 + div / 2) / div;
    }
    format!(
        "{}{}.{} {}",
        if neg { "-" } else { "" },
        tenths / 10,
        tenths % 10,
        UNITS[power]
    )
}

/// Like [`format_iec`] but always with a sign (`+1.0 MiB`, `-512 B`, `0 B`).
pub fn format_iec_signed(bytes: i64) -> String {
    if bytes > 0 {
        format!("+{}", format_iec(bytes))
    } else {
        format_iec(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("2 MiB"), Ok(2 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("0.5Ki"), Ok(512));
        assert_eq!(parse_size("10B"), Ok(10));
        assert_eq!(parse_size("7E"), Ok(7 << 60));
        assert!(matches!(parse_size("8E"), Err(SizeError::TooLarge(_))));
        assert!(matches!(parse_size("4KB"), Err(SizeError::BadUnit(_))));
        assert!(matches!(parse_size("-4K"), Err(SizeError::BadNumber(_))));
        assert!(matches!(parse_size("1.2.3"), Err(SizeError::BadNumber(_))));
        assert!(matches!(parse_size("K"), Err(SizeError::BadNumber(_))));
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert!(parse_size("99999999999999999999999999999999999999999999").is_err());
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_iec(0), "0 B");
        assert_eq!(format_iec(1023), "1023 B");
        assert_eq!(format_iec(1024), "1.0 KiB");
        assert_eq!(format_iec(229376), "224.0 KiB");
        assert_eq!(format_iec(1572864), "1.5 MiB");
        assert_eq!(format_iec(201326592), "192.0 MiB");
        assert_eq!(format_iec(-4096), "-4.0 KiB");
        assert_eq!(format_iec(1024 * 1024 - 1), "1.0 MiB");
        assert_eq!(format_iec(i64::MAX), "8.0 EiB");
        assert_eq!(format_iec(i64::MIN), "-8.0 EiB");
        assert_eq!(format_iec_signed(1 << 20), "+1.0 MiB");
        assert_eq!(format_iec_signed(-512), "-512 B");
    }
}
