/* The names and docs of the registries (registry.h), for cq_name. The bottom layer: it uses nothing else. */
#include <stddef.h>
#include "cq.h"

typedef struct {
  const char* name;
  const char* doc;
} cqi_entry;

#define CQI_ENTRY(ID, name, doc) {#name, doc},
static const cqi_entry boundaries[] = {CQ_BOUNDARIES(CQI_ENTRY)};
static const cqi_entry actuator_kinds[] = {CQ_ACTUATOR_KINDS(CQI_ENTRY)};
static const cqi_entry materials[] = {CQ_MATERIALS(CQI_ENTRY)};
static const cqi_entry integrators[] = {CQ_INTEGRATORS(CQI_ENTRY)};
static const cqi_entry backends[] = {CQ_BACKENDS(CQI_ENTRY)};
static const cqi_entry checks[] = {CQ_CHECKS(CQI_ENTRY)};
#undef CQI_ENTRY

const char* cq_name(int list, int id, const char** doc) {
  static const struct {
    const cqi_entry* entries;
    int count;
  } lists[] = {{boundaries, CQ_N_BOUNDARIES}, {actuator_kinds, CQ_N_ACTUATOR_KINDS}, {materials, CQ_N_MATERIALS},
               {integrators, CQ_N_INTEGRATORS}, {backends, CQ_N_BACKENDS}, {checks, CQ_N_CHECKS}};
  if (list < 0 || list >= (int)(sizeof lists / sizeof lists[0]) || id < 0 || id >= lists[list].count) return NULL;
  if (doc) *doc = lists[list].entries[id].doc;
  return lists[list].entries[id].name;
}
