/* trec_eval's tie-break: equal scores ordered by doc_id descending, bytes compared as strcmp. */
#include "_columns.h"

/* break_ties(order, same, queries, width, starts, grouped, docs, keys): in each given matrix row of
 * order (slots sorted by score), every run of slots marked equal by same (same[q, j]: slots j and
 * j + 1 tie) is reordered by doc_id descending, bytes compared as trec_eval's strcmp does. */

typedef struct {
    uint64_t high, low; /* the first 16 bytes, big-endian, zero-padded: most comparisons end here */
    int64_t row;
    int64_t slot;
} Keyed;

/* The column compared when two 16-byte prefixes are equal (qsort takes no context; the GIL is
 * held throughout, so no other call can change it). */
static const Column *tie_docs;

/* Byte order, a proper prefix first (strcmp's order); negated: doc_id descending. */
static int descending(const void *a, const void *b) {
    const Keyed *x = a, *y = b;
    if (x->high != y->high) return x->high < y->high ? 1 : -1;
    if (x->low != y->low) return x->low < y->low ? 1 : -1;
    const char *xb = NULL, *yb = NULL;
    Py_ssize_t xs = 0, ys = 0;
    column_get(tie_docs, x->row, &xb, &xs);
    column_get(tie_docs, y->row, &yb, &ys);
    Py_ssize_t common = xs < ys ? xs : ys;
    int c = common > 16 ? memcmp(xb + 16, yb + 16, (size_t)(common - 16)) : 0;
    if (c == 0) c = (xs > ys) - (xs < ys);
    return -c;
}

PyObject *rerankeval_break_ties(PyObject *self, PyObject *args) {
    PyObject *objects[6], *docs_spec;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OOOnOOOO", &objects[0], &objects[1], &objects[2], &width, &objects[3], &objects[4],
                          &docs_spec, &objects[5]))
        return NULL;
    Column docs = {0};
    Py_buffer views[6];
    int held[6] = {0};
    Keyed *scratch = NULL;
    PyObject *result = NULL;
    if (column_parse(docs_spec, &docs) < 0) goto done;
    /* order (n_codes x width, int64), same (n_codes x (width - 1), bytes), queries, starts, grouped,
     * keys (None, or row_keys' sort keys in grouped order) */
    const char *names[6] = {"order", "same", "queries", "starts", "grouped", "keys"};
    const Py_ssize_t item_sizes[6] = {8, 1, 8, 8, 8, 16};
    for (int k = 0; k < 6; k++) {
        if (k == 5 && objects[k] == Py_None) continue;
        if (get_view(objects[k], &views[k], 0, item_sizes[k], k == 0, names[k]) < 0) goto done;
        held[k] = 1;
    }
    const uint64_t *keys = held[5] ? views[5].buf : NULL;
    tie_docs = &docs;
    scratch = malloc((size_t)(width ? width : 1) * sizeof(Keyed));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    Py_buffer order = views[0], same = views[1], queries = views[2], starts = views[3], grouped = views[4];
    int64_t *order_of = order.buf;
    const uint8_t *same_of = same.buf;
    const int64_t *query_of = queries.buf, *start_of = starts.buf, *grouped_of = grouped.buf;
    Py_ssize_t n_queries = queries.len / 8;
    for (Py_ssize_t k = 0; k < n_queries; k++) {
        int64_t q = query_of[k];
        int64_t *slots = order_of + q * width;
        const uint8_t *ties = same_of + q * (width - 1);
        Py_ssize_t j = 0;
        while (j < width - 1) {
            if (!ties[j]) {
                j++;
                continue;
            }
            Py_ssize_t end = j + 1;
            while (end < width - 1 && ties[end]) end++;
            /* slots j..end tie */
            for (Py_ssize_t i = j; i <= end; i++) {
                int64_t at = start_of[q] + slots[i];
                Keyed *item = &scratch[i - j];
                item->row = grouped_of[at];
                item->slot = slots[i];
                if (keys != NULL) {
                    item->high = keys[2 * at];
                    item->low = keys[2 * at + 1];
                } else {
                    const char *bytes;
                    Py_ssize_t size;
                    if (read_row(&docs, 0, item->row, &bytes, &size) < 0) goto done;
                    sort_key(bytes, size, &item->high, &item->low);
                }
            }
            Py_ssize_t tied = end - j + 1;
            if (tied > 16) {
                qsort(scratch, (size_t)tied, sizeof(Keyed), descending);
            } else {
                for (Py_ssize_t i = 1; i < tied; i++) { /* insertion sort: most ties are short */
                    Keyed moving = scratch[i];
                    Py_ssize_t at = i;
                    for (; at > 0 && descending(&scratch[at - 1], &moving) > 0; at--) scratch[at] = scratch[at - 1];
                    scratch[at] = moving;
                }
            }
            for (Py_ssize_t i = j; i <= end; i++) slots[i] = scratch[i - j].slot;
            j = end + 1;
        }
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 6; k++)
        if (held[k]) PyBuffer_Release(&views[k]);
    column_release(&docs);
    free(scratch);
    return result;
}
