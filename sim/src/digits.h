/* sim/src/digits.h: digit runs to integers, one way for every text the
 * simulator reads (the command line, strategy specs, replay files).
 *
 * Header-only: the functions are a few lines each and static, so each
 * file that parses text gets its own copy without a new link dependency.
 * None of them allocates, prints or touches global state.
 */
#ifndef POLLEN_SIM_DIGITS_H
#define POLLEN_SIM_DIGITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of hex digit c (either case), or -1 when c is not one. */
static inline int hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Reads s[0, len) as a decimal uint64_t: at least one digit, digits only
 * (no sign, no spaces), no overflow. Returns false otherwise and leaves
 * *out alone. */
static inline bool parse_decimal(const char *s, size_t len, uint64_t *out)
{
    if (len == 0) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Reads s[0, len) as 1 to 16 hex digits (no "0x"). Returns false
 * otherwise and leaves *out alone. */
static inline bool parse_hex(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 16) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        int d = hex_digit(s[i]);
        if (d < 0) {
            return false;
        }
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

#endif
