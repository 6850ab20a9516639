/* placeholder: being written */
#include "test.h"
int main(void) { return NC_TEST_SKIP; }
