/* tools/train_eval_chars.c — neocog-train eval's report for character sets
 * (see train_groups.h): what a 94-class model gets wrong, by kind of
 * character, with the ambiguity groups apart. */
#include "train_groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"

#define TOP_K 3u
#define CONFUSIONS_SHOWN 25u

typedef struct tally {
    uint32_t n, err, err_top, err_forgiven;
} tally;

static void tally_row(const char *name, const tally *t)
{
    printf("  %-12s %7u %7u  %6.2f%%    %6.2f%%    %6.2f%%\n", name, t->n, t->err,
           t->n ? 100.0 * t->err / t->n : 0.0, t->n ? 100.0 * t->err_top / t->n : 0.0,
           t->n ? 100.0 * t->err_forgiven / t->n : 0.0);
}

typedef struct pair_count {
    uint32_t count, t, a;
} pair_count;

static int by_count_desc(const void *x, const void *y)
{
    const pair_count *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->t != b->t ? (a->t < b->t ? -1 : 1) : (a->a < b->a ? -1 : a->a > b->a);
}

int train_report_chars(const nc_model_info *info, const uint8_t *lab, const int32_t *ans,
                       const float *raw, uint32_t n)
{
    const uint32_t K = info->n_classes;
    pair_count *pairs = calloc((size_t)K * K, sizeof *pairs);
    tally *group = calloc(train_n_groups, sizeof *group);
    uint32_t *group_inside = calloc(train_n_groups, sizeof *group_inside);
    if (!pairs || !group || !group_inside) {
        free(pairs);
        free(group);
        free(group_inside);
        return -ENOMEM;
    }
    tally kind[TRAIN_KINDS] = { { 0 } }, all = { 0 };
    uint32_t in_groups = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t t = lab[i];
        uint8_t top[TOP_K];
        const uint32_t k = K < TOP_K ? K : TOP_K;
        nc_answer_rank(raw + (size_t)i * K, K, k, top);
        int in_top = 0;
        for (uint32_t j = 0; j < k; j++)
            in_top |= top[j] == t;
        const int wrong = ans[i] != (int32_t)t;
        const int within = wrong && ans[i] >= 0 &&
                           train_groups_confuse(info->labels[t], info->labels[ans[i]]);
        tally *rows[2] = { &kind[train_kind_of(info->labels[t])], &all };
        for (int r = 0; r < 2; r++) {
            rows[r]->n++;
            rows[r]->err += wrong;
            rows[r]->err_top += !in_top;
            rows[r]->err_forgiven += wrong && !within;
        }
        in_groups += within;
        for (uint32_t g = 0; g < train_n_groups; g++)
            if (train_group_has(g, info->labels[t])) {
                group[g].n++;
                group[g].err += wrong;
                group_inside[g] += wrong && ans[i] >= 0 && train_group_has(g, info->labels[ans[i]]);
            }
        if (wrong && ans[i] >= 0)
            pairs[(size_t)t * K + (uint32_t)ans[i]].count++;
    }

    printf("\ncharacters  by kind (top-3: the true class not among the %u highest scores;\n"
           "            forgiven: a confusion within an ambiguity group not counted)\n", TOP_K);
    printf("  %-12s %7s %7s  %7s  %9s  %9s\n", "kind", "samples", "errors", "error",
           "top-3 err", "forgiven");
    for (int k = 0; k < TRAIN_KINDS; k++)
        if (kind[k].n)
            tally_row(train_kind_name((train_char_kind)k), &kind[k]);
    tally_row("all", &all);
    printf("            %u of %u errors (%.1f%%) are confusions within a group\n", in_groups,
           all.err, all.err ? 100.0 * in_groups / all.err : 0.0);

    printf("\nambiguity groups (samples whose true class is in the group)\n");
    printf("  %-10s %7s %7s  %7s  %s\n", "group", "samples", "errors", "error",
           "within the group");
    for (uint32_t g = 0; g < train_n_groups; g++)
        if (group[g].n)
            printf("  %-10s %7u %7u  %6.2f%%  %u\n", train_groups[g], group[g].n, group[g].err,
                   100.0 * group[g].err / group[g].n, group_inside[g]);

    for (uint32_t t = 0; t < K; t++)
        for (uint32_t a = 0; a < K; a++) {
            pairs[(size_t)t * K + a].t = t;
            pairs[(size_t)t * K + a].a = a;
        }
    qsort(pairs, (size_t)K * K, sizeof *pairs, by_count_desc);
    printf("\nmost frequent confusions (true -> answer: count; * within a group)\n");
    for (uint32_t j = 0; j < CONFUSIONS_SHOWN && pairs[j].count; j++)
        printf("  %-4s -> %-4s %5u%s\n", info->labels[pairs[j].t], info->labels[pairs[j].a],
               pairs[j].count,
               train_groups_confuse(info->labels[pairs[j].t], info->labels[pairs[j].a]) ? " *"
                                                                                        : "");
    free(pairs);
    free(group);
    free(group_inside);
    return 0;
}
