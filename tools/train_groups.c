/* tools/train_groups.c — see train_groups.h. */
#include "train_groups.h"

#include <string.h>

const char *const train_groups[] = {
    "o O 0", "l 1 I |", "c C", "s S", "u U", "v V", "w W", "x X", "z Z",
    "p P", "k K", ". ,", "' ,", "' `", "- _",
};
const uint32_t train_n_groups = sizeof train_groups / sizeof train_groups[0];

int train_group_has(uint32_t g, const char *label)
{
    const size_t n = strlen(label);
    if (g >= train_n_groups || n == 0)
        return 0;
    for (const char *p = train_groups[g]; *p;) {
        const char *end = strchr(p, ' ');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !memcmp(p, label, n))
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

int train_groups_confuse(const char *a, const char *b)
{
    if (!strcmp(a, b))
        return 0;
    for (uint32_t g = 0; g < train_n_groups; g++)
        if (train_group_has(g, a) && train_group_has(g, b))
            return 1;
    return 0;
}

train_char_kind train_kind_of(const char *label)
{
    if (!label[0] || label[1])
        return TRAIN_KIND_OTHER;
    const char c = label[0];
    if (c >= '0' && c <= '9')
        return TRAIN_KIND_DIGIT;
    if (c >= 'A' && c <= 'Z')
        return TRAIN_KIND_UPPER;
    if (c >= 'a' && c <= 'z')
        return TRAIN_KIND_LOWER;
    if (c > ' ' && c < 127)
        return TRAIN_KIND_PUNCT;
    return TRAIN_KIND_OTHER;
}

const char *train_kind_name(train_char_kind k)
{
    static const char *const names[TRAIN_KINDS] = {
        "digits", "upper case", "lower case", "punctuation", "other",
    };
    return k < TRAIN_KINDS ? names[k] : "?";
}
