//! Decimal values as Connect holds them (a Java `BigDecimal`): an unscaled integer of any size and
//! a scale, the value being `unscaled × 10^-scale`. The unscaled integer is kept as Connect writes
//! it to bytes (`BigInteger.toByteArray`: big-endian two's complement, shortest form), so that the
//! common path, bytes in and bytes out, does no arithmetic.

use super::DataError;

/// The most decimal digits a decimal may have, so that a hostile number cannot make the
/// conversion to and from text take quadratic time without end.
pub const MAX_DECIMAL_DIGITS: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    /// Big-endian two's complement, shortest form (never empty).
    unscaled: Vec<u8>,
    scale: i32,
}

/// The low 64 bits, in two's complement, of `digits × 10^shift` with the fraction dropped, made
/// negative when `negative`: Java's narrowing of a `BigInteger` or `BigDecimal` to a `long`.
/// `digits` are ASCII decimal digits.
pub fn wrapping_long(negative: bool, digits: &[u8], shift: i64) -> i64 {
    let kept = if shift < 0 { digits.len().saturating_sub(shift.unsigned_abs() as usize) } else { digits.len() };
    let mut magnitude: u64 = 0;
    for d in &digits[..kept] {
        magnitude = magnitude.wrapping_mul(10).wrapping_add(u64::from(d.wrapping_sub(b'0')));
    }
    // 10^64 is a multiple of 2^64: past 64 more zeros the low bits are all zero.
    for _ in 0..shift.clamp(0, 64) {
        magnitude = magnitude.wrapping_mul(10);
    }
    (if negative { magnitude.wrapping_neg() } else { magnitude }) as i64
}

impl Decimal {
    /// Java's `BigDecimal.longValue()`: the fraction dropped, then the low 64 bits of the integer.
    pub fn long_value(&self) -> i64 {
        let text = self.unscaled_text();
        let (negative, digits) = match text.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, text.as_str()),
        };
        wrapping_long(negative, digits.as_bytes(), -i64::from(self.scale()))
    }

    /// From the unscaled integer's two's complement bytes (any length but zero) and a scale.
    pub fn from_unscaled_bytes(bytes: &[u8], scale: i32) -> Result<Self, DataError> {
        if bytes.is_empty() {
            return Err(DataError::new("a Decimal's bytes are empty; it needs at least one byte"));
        }
        if bytes.len() > MAX_DECIMAL_DIGITS {
            return Err(DataError::new(format!(
                "a Decimal of {} bytes is larger than Wharf allows ({MAX_DECIMAL_DIGITS} bytes)",
                bytes.len()
            )));
        }
        Ok(Decimal { unscaled: shortest(bytes), scale })
    }

    pub fn from_i64(unscaled: i64, scale: i32) -> Self {
        Decimal { unscaled: shortest(&unscaled.to_be_bytes()), scale }
    }

    /// The unscaled integer as Connect's `Decimal.fromLogical` writes it.
    pub fn unscaled_bytes(&self) -> &[u8] {
        &self.unscaled
    }

    pub fn scale(&self) -> i32 {
        self.scale
    }

    fn is_negative(&self) -> bool {
        self.unscaled[0] & 0x80 != 0
    }

    /// Reads a JSON number as Java's `new BigDecimal(text)` does: `1.50` has scale 2, `1E+3` has
    /// scale -3.
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let bad = || DataError::new(format!("{text:?} is not a decimal number"));
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], rest[at + 1..].parse::<i64>().map_err(|_| bad())?),
            None => (rest, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if whole.is_empty() && fraction.is_empty() {
            return Err(bad());
        }
        let digits: Vec<u8> = whole.bytes().chain(fraction.bytes()).collect();
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        let scale = i32::try_from(fraction.len() as i64 - exponent)
            .map_err(|_| DataError::new(format!("{text:?} has an exponent beyond what a decimal can hold")))?;
        let digits = trim_leading_zeros(&digits);
        if digits.len() > MAX_DECIMAL_DIGITS {
            return Err(DataError::new(format!(
                "a decimal of {} digits is longer than Wharf allows ({MAX_DECIMAL_DIGITS} digits)",
                digits.len()
            )));
        }
        let magnitude = magnitude_from_digits(digits);
        Ok(Decimal { unscaled: twos_complement(&magnitude, negative), scale })
    }

    /// The unscaled integer in decimal digits, and whether it is negative.
    fn unscaled_digits(&self) -> (bool, String) {
        let negative = self.is_negative();
        let magnitude = magnitude_of(&self.unscaled, negative);
        (negative, digits_of(magnitude))
    }

    /// The unscaled integer in decimal (Java's `unscaledValue().toString()`).
    pub fn unscaled_text(&self) -> String {
        let (negative, digits) = self.unscaled_digits();
        if negative {
            format!("-{digits}")
        } else {
            digits
        }
    }

    /// Java's `BigDecimal.toString()`: plain digits when the scale is not negative and the
    /// number is not tiny, scientific notation (`1.23E+5`, `1E-7`) otherwise.
    pub fn to_java_string(&self) -> String {
        let (negative, digits) = self.unscaled_digits();
        let mut out = String::with_capacity(digits.len() + 8);
        if negative {
            out.push('-');
        }
        let adjusted = -(self.scale as i64) + (digits.len() as i64 - 1);
        if self.scale >= 0 && adjusted >= -6 {
            let scale = self.scale as usize;
            if scale == 0 {
                out.push_str(&digits);
            } else if digits.len() > scale {
                let (whole, fraction) = digits.split_at(digits.len() - scale);
                out.push_str(whole);
                out.push('.');
                out.push_str(fraction);
            } else {
                out.push_str("0.");
                out.extend(std::iter::repeat_n('0', scale - digits.len()));
                out.push_str(&digits);
            }
        } else {
            out.push_str(&digits[..1]);
            if digits.len() > 1 {
                out.push('.');
                out.push_str(&digits[1..]);
            }
            out.push('E');
            if adjusted >= 0 {
                out.push('+');
            }
            out.push_str(&adjusted.to_string());
        }
        out
    }

    /// The decimal as the nearest `f64` (for a converter that writes a decimal as a double).
    pub fn to_f64(&self) -> f64 {
        let (negative, digits) = self.unscaled_digits();
        let text = format!("{}{digits}e{}", if negative { "-" } else { "" }, -(self.scale as i64));
        text.parse().unwrap_or(f64::NAN)
    }
}

/// Two's complement bytes without redundant sign bytes.
fn shortest(bytes: &[u8]) -> Vec<u8> {
    let mut start = 0;
    while start + 1 < bytes.len() {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    bytes[start..].to_vec()
}

fn trim_leading_zeros(digits: &[u8]) -> &[u8] {
    let first = digits.iter().position(|d| *d != b'0').unwrap_or(digits.len());
    &digits[first..]
}

/// Base 10^9 limbs, least significant first, of a run of ASCII digits.
fn magnitude_from_digits(digits: &[u8]) -> Vec<u32> {
    let mut limbs: Vec<u32> = Vec::new();
    for chunk in digits.chunks(9) {
        let mut factor: u64 = 1;
        let mut add: u64 = 0;
        for d in chunk {
            factor *= 10;
            add = add * 10 + u64::from(d - b'0');
        }
        // limbs = limbs × factor + add, in base 2^32.
        let mut carry = add;
        for limb in limbs.iter_mut() {
            let product = u64::from(*limb) * factor + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        while carry > 0 {
            limbs.push(carry as u32);
            carry >>= 32;
        }
    }
    limbs
}

/// Base 2^32 limbs (least significant first) as decimal digits.
fn digits_of(mut limbs: Vec<u32>) -> String {
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    if limbs.is_empty() {
        return "0".to_string();
    }
    let mut groups: Vec<u32> = Vec::new();
    while !limbs.is_empty() {
        let mut remainder: u64 = 0;
        for limb in limbs.iter_mut().rev() {
            let current = (remainder << 32) | u64::from(*limb);
            *limb = (current / 1_000_000_000) as u32;
            remainder = current % 1_000_000_000;
        }
        groups.push(remainder as u32);
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
    }
    let mut out = groups.last().map(u32::to_string).unwrap_or_default();
    for group in groups.iter().rev().skip(1) {
        out.push_str(&format!("{group:09}"));
    }
    out
}

/// Two's complement negation in place: invert, add one.
fn negate(be: &mut [u8]) {
    for b in be.iter_mut() {
        *b = !*b;
    }
    for b in be.iter_mut().rev() {
        let (sum, overflow) = b.overflowing_add(1);
        *b = sum;
        if !overflow {
            break;
        }
    }
}

/// The magnitude (base 2^32 limbs, least significant first) of two's complement bytes.
fn magnitude_of(bytes: &[u8], negative: bool) -> Vec<u32> {
    let mut be: Vec<u8> = bytes.to_vec();
    if negative {
        negate(&mut be);
    }
    be.rchunks(4).map(|chunk| chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b))).collect()
}

/// Two's complement bytes, shortest form, of a magnitude and a sign.
fn twos_complement(limbs: &[u32], negative: bool) -> Vec<u8> {
    let mut be: Vec<u8> = Vec::with_capacity(limbs.len() * 4 + 1);
    be.push(0);
    for limb in limbs.iter().rev() {
        be.extend_from_slice(&limb.to_be_bytes());
    }
    if negative {
        negate(&mut be);
    }
    shortest(&be)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_and_writes_as_java_big_decimal_does() {
        for (text, unscaled, scale, java) in [
            ("1.50", &[0x00, 0x96][..], 2, "1.50"),
            ("0", &[0][..], 0, "0"),
            ("-0.0", &[0][..], 1, "0.0"),
            ("1E+3", &[1][..], -3, "1E+3"),
            ("1e3", &[1][..], -3, "1E+3"),
            ("12.5e-9", &[125][..], 10, "1.25E-8"),
            ("0.000001", &[1][..], 6, "0.000001"),
            ("0.0000001", &[1][..], 7, "1E-7"),
            ("-128", &[0x80][..], 0, "-128"),
            ("128", &[0x00, 0x80][..], 0, "128"),
            ("-1.29", &[0xff, 0x7f][..], 2, "-1.29"),
        ] {
            let d = Decimal::parse(text).unwrap();
            assert_eq!(d.unscaled_bytes(), unscaled, "{text}");
            assert_eq!(d.scale(), scale, "{text}");
            assert_eq!(d.to_java_string(), java, "{text}");
        }
    }

    #[test]
    fn large_numbers_keep_every_digit() {
        let text = "-123456789012345678901234567890.123456789";
        let d = Decimal::parse(text).unwrap();
        assert_eq!(d.to_java_string(), text);
        let again = Decimal::from_unscaled_bytes(d.unscaled_bytes(), d.scale()).unwrap();
        assert_eq!(again, d);
    }

    #[test]
    fn redundant_sign_bytes_are_dropped() {
        let d = Decimal::from_unscaled_bytes(&[0xff, 0xff, 0x85], 0).unwrap();
        assert_eq!(d.unscaled_bytes(), &[0x85]);
        assert_eq!(d.to_java_string(), "-123");
        assert_eq!(Decimal::from_i64(-1, 0).unscaled_bytes(), &[0xff]);
        assert_eq!(Decimal::from_i64(255, 1).to_java_string(), "25.5");
    }

    #[test]
    fn bad_input_is_refused_with_a_reason() {
        assert!(Decimal::from_unscaled_bytes(&[], 0).unwrap_err().message.contains("empty"));
        for text in ["", "-", "1.2.3", "abc", "1e", "."] {
            assert!(Decimal::parse(text).is_err(), "{text}");
        }
        let long = "9".repeat(MAX_DECIMAL_DIGITS + 1);
        assert!(Decimal::parse(&long).unwrap_err().message.contains("longer than"));
        assert!(Decimal::parse("1e99999999999").is_err());
    }
}
