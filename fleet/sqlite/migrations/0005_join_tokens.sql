-- Placeholder: issue16b adds the real 0005_join_tokens.sql. This branch
-- (issue16c) needs a version 5 only so that its 0006 follows without a gap;
-- when the branches merge, issue16b's file replaces this one.
SELECT 1;
