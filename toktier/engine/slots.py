"""The result slots of a compiled repair plan (``engine.splice``), in a module of plain ints.

``Tier`` reads a few of them on every append; keeping them here lets it do so without
importing the compiled planner (and numba's engine modules) where no planner is used.
"""

# plan result slots (int64[RES_SIZE])
R_STATUS = 0  # 0 ok, else one of the failures below
R_KEEP_LEFT = 1  # cached records [0, keep_left) stay
R_FRESH_FROM = 2  # fresh records [fresh_from, fresh_to) go in the middle
R_FRESH_TO = 3
R_KEEP_RIGHT = 4  # cached records [keep_right, n) follow, shifted (edits); -1: none
R_B_LEFT = 5  # certified boundaries (characters of the new text); -1: none
R_B_RIGHT = 6
R_LEFT_OK = 7
R_RIGHT_OK = 8
R_WHY_SIDE = 9  # 1 left, 2 right (the side that failed last)
R_WHY_KIND = 10  # 1 no equal run, 2 run without a stable boundary
R_RUN_LEN = 11  # length of the refused run
R_N_FRESH = 12  # records the window encode produced
R_KEEP = 13  # leading IDs equal to the old sequence (>= keep_left)
R_NEW_N = 14  # records after the splice
R_APPLIED = 15  # 1: the splice was written into the session arrays by the same call
R_CUT = 16  # cut splice: the cached record at the session's cut (``find_cut``); -1: none
R_RCUT = 17  # an edit's right cut: the cached record it resumes at (``find_right_cut``); -1: none
RES_SIZE = 18

OK = 0
FAILED = 1  # no certified splice in this window (widen)
NEED_RECORDS = 2  # the engine cannot encode this window alone (NFC-unsafe): encode it outside

WHY_NO_RUN = 1
WHY_NO_BOUNDARY = 2

# a certified first-window splice's reason (``Result.reason``): its window started inside
# the text, or covered all of it
REASON_FIRST_WINDOW = "first-window splice"
REASON_WHOLE_TEXT = "window covers the whole text"
