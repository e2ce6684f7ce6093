/* core/src/list.h: intrusive circular doubly linked list with a sentinel.
 *
 * A list is a pl_list_node used as the sentinel: empty when it points at
 * itself. Element nodes are embedded in their owners and found again with
 * pl_container_of. An unlinked element node is {NULL, NULL}, so a zeroed
 * (or PL_FUTURE_INIT-built) owner starts unlinked and may be moved freely
 * until it is linked. Nothing here allocates.
 *
 * The node type is declared in pollen/sync.h because public structs embed
 * it; everything that operates on it lives here.
 */
#ifndef POLLEN_LIST_H
#define POLLEN_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"
#include "pollen/sync.h"

/* Makes `list` an empty list. A sentinel must not move afterwards. */
static inline void pl_list_init(pl_list_node *list)
{
    list->next = list;
    list->prev = list;
}

static inline bool pl_list_empty(const pl_list_node *list) { return list->next == list; }

/* True while `node` is an element of some list. */
static inline bool pl_list_is_linked(const pl_list_node *node) { return node->next != NULL; }

static inline void pl__list_insert(pl_list_node *prev, pl_list_node *node, pl_list_node *next)
{
    node->prev = prev;
    node->next = next;
    prev->next = node;
    next->prev = node;
}

static inline void pl_list_push_back(pl_list_node *list, pl_list_node *node)
{
    PL_ASSERT(!pl_list_is_linked(node));
    pl__list_insert(list->prev, node, list);
}

static inline void pl_list_push_front(pl_list_node *list, pl_list_node *node)
{
    PL_ASSERT(!pl_list_is_linked(node));
    pl__list_insert(list, node, list->next);
}

/* Unlinks `node` from whatever list holds it and marks it unlinked. */
static inline void pl_list_remove(pl_list_node *node)
{
    PL_ASSERT(pl_list_is_linked(node));
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->next = NULL;
    node->prev = NULL;
}

/* The first element, or NULL when the list is empty. */
static inline pl_list_node *pl_list_front(const pl_list_node *list)
{
    return pl_list_empty(list) ? NULL : list->next;
}

/* Unlinks and returns the first element, or NULL when the list is empty. */
static inline pl_list_node *pl_list_pop_front(pl_list_node *list)
{
    pl_list_node *node = list->next;
    if (node == list) {
        return NULL;
    }
    pl_list_remove(node);
    return node;
}

/* Moves every element of `from` to the back of `to`, in order; `from`
 * is left empty. */
static inline void pl_list_splice(pl_list_node *to, pl_list_node *from)
{
    if (pl_list_empty(from)) {
        return;
    }
    pl_list_node *first = from->next;
    pl_list_node *last = from->prev;
    first->prev = to->prev;
    to->prev->next = first;
    last->next = to;
    to->prev = last;
    pl_list_init(from);
}

/* Consumes a list: runs the body with `node` bound to each element,
 * unlinked before the body runs, until the list is empty. The body may
 * push onto or remove from the same list. */
#define PL_LIST_CONSUME(node, list)                                         \
    for (pl_list_node *node; ((node) = pl_list_pop_front(list)) != NULL;)

#endif
