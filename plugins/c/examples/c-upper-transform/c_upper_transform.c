/* c-upper-transform: upper-cases a record's value when it is a string, or, with `field` set, that
 * field of a struct value; drops records whose value is null; and adds the header
 * `transformed-by` (bytes of this plugin's name) to every record it keeps. Other values pass
 * unchanged. Letters are upper-cased one for one, by towupper over UTF-8: ß gives ẞ, where Rust,
 * Python and JavaScript give SS. */
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "wharf.h"

#define NAME "c-upper-transform"

static const wharf_config_key keys[] = {
    {"field", WHARF_STRING, "", false, WHARF_MEDIUM,
     "The struct field to upper-case; empty: only string values are."},
};

const wharf_plugin_info WHARF_PLUGIN = {
    .name = NAME,
    .version = "0.1.0",
    .description = "Upper-cases string values or one struct field, drops null values (C example)",
    .config = keys,
    .config_len = sizeof keys / sizeof keys[0],
};

typedef struct {
    char *field; /* NULL: none */
    char *scratch;
    size_t scratch_len;
} upper;

int wharf_transform_open(const wharf_config *config, void **state) {
    upper *u = calloc(1, sizeof *u);
    if (!u) {
        wharf_error("out of memory opening " NAME);
        return WHARF_FAIL;
    }
    const char *field = wharf_config_get(config, "field");
    if (field && *field) u->field = strdup(field);
    *state = u;
    return WHARF_OK;
}

/* Decodes one UTF-8 character at s (n bytes left) into *c; its length, or 0 when it is not valid
 * UTF-8 (that byte is then kept as it is). */
static size_t utf8_decode(const unsigned char *s, size_t n, wint_t *c) {
    if (s[0] < 0x80) {
        *c = s[0];
        return 1;
    }
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    if (len == 0 || len > n || s[0] > 0xf4) return 0;
    wint_t v = s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    static const wint_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *c = v;
    return len;
}

static size_t utf8_encode(wint_t c, unsigned char *out) {
    if (c < 0x80) {
        out[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (unsigned char)(0xc0 | (c >> 6));
        out[1] = (unsigned char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xe0 | (c >> 12));
        out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | (c >> 18));
    out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (c & 0x3f));
    return 4;
}

/* Replaces the string d holds with its upper case; WHARF_OK too when d is not a string. */
static int upper_case(upper *u, const wharf_datum *d, wharf_batch *batch, const char *topic) {
    size_t len;
    const unsigned char *s = (const unsigned char *)wharf_datum_string(d, &len);
    if (!s) return WHARF_OK;
    /* An upper case may take more bytes than its letter (ɐ, two bytes, gives Ɐ, three): at most twice. */
    size_t room = len * 2 + 4;
    if (room > u->scratch_len) {
        char *more = realloc(u->scratch, room);
        if (!more) {
            wharf_error("out of memory upper-casing a value of %zu bytes for %s", len, topic);
            return WHARF_FAIL;
        }
        u->scratch = more;
        u->scratch_len = room;
    }
    unsigned char *out = (unsigned char *)u->scratch;
    size_t at = 0;
    for (size_t i = 0; i < len;) {
        wint_t c;
        size_t n = utf8_decode(s + i, len - i, &c);
        if (n == 0) {
            out[at++] = s[i++];
            continue;
        }
        at += utf8_encode(towupper(c), out + at);
        i += n;
    }
    return wharf_datum_set(d, wharf_string_n(batch, u->scratch, at));
}

/* The field of a struct value named `field`, or none (value -1) when the value has none. */
static wharf_datum struct_field(const wharf_datum *value, const char *field) {
    wharf_datum none = {value->batch, -1, UINT32_MAX};
    if (wharf_datum_kind(value) != WHARF_KIND_STRUCT) return none;
    size_t want = strlen(field);
    for (size_t i = 0; i < wharf_datum_count(value); i++) {
        size_t len;
        const char *name = wharf_datum_field_name(value, i, &len);
        if (name && len == want && memcmp(name, field, len) == 0) return wharf_datum_child(value, i);
    }
    return none;
}

int wharf_transform_apply(void *state, wharf_transform_record *records, size_t count, wharf_batch *batch) {
    upper *u = state;
    for (size_t i = 0; i < count; i++) {
        wharf_transform_record *r = &records[i];
        const wharf_datum *value = r->value_data;
        if ((!r->value && !value) || (value && wharf_datum_kind(value) == WHARF_KIND_NULL)) {
            r->drop = true;
            continue;
        }
        int rc = WHARF_OK;
        if (value && wharf_datum_kind(value) == WHARF_KIND_STRING) {
            rc = upper_case(u, value, batch, r->topic);
        } else if (value && u->field && value->schema >= 0) {
            wharf_datum field = struct_field(value, u->field);
            if (field.value != UINT32_MAX) rc = upper_case(u, &field, batch, r->topic);
        }
        if (rc == WHARF_OK) rc = wharf_record_add_header(r, "transformed-by", wharf_part_bytes(NAME, strlen(NAME)));
        if (rc != WHARF_OK) return rc;
    }
    return WHARF_OK;
}

void wharf_transform_close(void *state) {
    upper *u = state;
    free(u->field);
    free(u->scratch);
    free(u);
}
