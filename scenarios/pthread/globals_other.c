/* globals_other: the second file of globals.c's program. */
int other_value(void);
void other_change(void);

static int other = 42;
static int other_zero;

int other_value(void)
{
    return other_zero == 0 ? other : -1;
}

void other_change(void)
{
    other = 0;
    other_zero = 1;
}
