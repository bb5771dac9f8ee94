-- A placeholder: number 0010 belongs to another branch's migration, merged before this one. The
-- migrations must be numbered without gaps (src/db/migrate.ts), so this file holds the place until
-- then; it changes nothing. At the merge it is replaced by that branch's 0010.
select 1;
