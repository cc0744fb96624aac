//! Skills registered at link time ([`register_skill!`](crate::register_skill),
//! [`SkillRegistration`]) and a program's skills by site id ([`Skills`]).

use std::collections::BTreeMap;

use tackle_core::registry::Registry;

use super::{Skill, SkillError};

/// A skill registered at link time by [`register_skill!`](crate::register_skill).
#[derive(Debug)]
pub struct SkillRegistration {
    build: fn() -> Result<Skill, SkillError>,
    file: &'static str,
    line: u32,
}

impl SkillRegistration {
    /// A registration of the skill `build` makes, defined at `file:line`.
    pub const fn new(
        build: fn() -> Result<Skill, SkillError>,
        file: &'static str,
        line: u32,
    ) -> SkillRegistration {
        SkillRegistration { build, file, line }
    }
}

inventory::collect!(SkillRegistration);

/// Registers a skill at link time: `register_skill!(my_skill)`, where
/// `fn my_skill() -> Result<Skill, SkillError>` builds it. [`Skills::from_inventory`]
/// collects every registration.
#[macro_export]
macro_rules! register_skill {
    ($build:path) => {
        $crate::abi::inventory::submit! {
            $crate::skill::SkillRegistration::new($build, ::core::file!(), ::core::line!())
        }
    };
}

/// The skills of a program, by site id. See the [module docs](super).
#[derive(Debug, Default)]
pub struct Skills {
    skills: BTreeMap<String, (Skill, String)>,
}

impl Skills {
    /// No skills.
    pub fn new() -> Skills {
        Skills::default()
    }

    /// Every skill registered with [`register_skill!`](crate::register_skill), each
    /// built and its tools checked against `registry`; the first failure is returned.
    pub fn from_inventory(registry: &Registry) -> Result<Skills, SkillError> {
        let mut skills = Skills::new();
        let mut registrations: Vec<&SkillRegistration> =
            inventory::iter::<SkillRegistration>.into_iter().collect();
        registrations.sort_by_key(|r| (r.file, r.line));
        for registration in registrations {
            let skill = (registration.build)()?;
            let place = format!("{}:{}", registration.file, registration.line);
            skills.insert(skill, place, registry)?;
        }
        Ok(skills)
    }

    /// Adds a skill after checking its tools against `registry`.
    pub fn register(&mut self, skill: Skill, registry: &Registry) -> Result<(), SkillError> {
        self.insert(skill, "run time".to_owned(), registry)
    }

    fn insert(
        &mut self,
        skill: Skill,
        place: String,
        registry: &Registry,
    ) -> Result<(), SkillError> {
        skill.check_tools(registry)?;
        let site_id = skill.site_id();
        if let Some((_, first)) = self.skills.get(&site_id) {
            return Err(SkillError::Duplicate {
                site_id,
                first: first.clone(),
                second: place,
            });
        }
        self.skills.insert(site_id, (skill, place));
        Ok(())
    }

    /// The skill with this site id, or the highest version of this name.
    pub fn get(&self, id: &str) -> Result<&Skill, SkillError> {
        if let Some((skill, _)) = self.skills.get(id) {
            return Ok(skill);
        }
        self.skills
            .values()
            .map(|(s, _)| s)
            .filter(|s| s.name == id)
            .max_by(|a, b| tackle_core::version::compare_versions(&a.version, &b.version))
            .ok_or_else(|| SkillError::NotFound(id.to_owned()))
    }

    /// Every skill, by site id.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values().map(|(s, _)| s)
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}
